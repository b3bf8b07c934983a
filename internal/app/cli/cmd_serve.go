package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/carry"
	"github.com/redlockctl/redlockctl/inspect/export"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
)

// shutdownGrace bounds how long serve waits for scrapes in progress when told to stop.
const shutdownGrace = 5 * time.Second

// serveOptions are the flags of serve.
type serveOptions struct {
	listen, output, webConfig   string
	printAlerts, printDashboard bool
}

func newServeCmd(e *env) *cobra.Command {
	o := &serveOptions{}
	c := &cobra.Command{
		Use:     "serve",
		Short:   "Serve lock state as Prometheus metrics (/metrics, /healthz)",
		Long:    "Serve the masters' lock state as Prometheus metrics on /metrics (and /healthz), polling every poll_interval. It never sends a write command. It records every lock lifecycle the live feed reports to its history store ([history] dir; docs/history.md) and answers redlockctl history on /api/v1/history, behind the same --web.config.file.",
		Example: "  redlockctl serve --listen :7335\n  redlockctl serve --print-alerts > redlockctl-alerts.yml",
		Args:    noArgs,
		RunE:    e.do(func([]string) int { return runServe(e, o) }),
	}
	fs := c.Flags()
	fs.StringVar(&o.listen, "listen", fmt.Sprintf(":%d", export.DefaultPort), "address to serve /metrics and /healthz on, host:port")
	fs.BoolVar(&o.printAlerts, "print-alerts", false, "print the Prometheus alert rules file and exit")
	fs.BoolVar(&o.printDashboard, "print-dashboard", false, "print the Grafana dashboard JSON and exit")
	outputFlag(c, &o.output, "", report.FileHelp(), append(report.Names(report.CmdPrintAlerts), report.Names(report.CmdPrintDashboard)...)...)
	fs.StringVar(&o.webConfig, "web.config.file", "", "exporter-toolkit web config (TLS, basic auth), as node_exporter and redis_exporter take it")
	return c
}

// runServe is `redlockctl serve [--listen ADDR] [--print-alerts | --print-dashboard [-o FORMAT]]`:
// a Prometheus exporter that polls the masters every poll_interval in the background
// and serves the last completed snapshot on /metrics, plus /healthz. It never sends a
// write command. Exit codes: 0 after SIGINT/SIGTERM (or a --print flag), 1 when the
// server fails while running, 2 for bad usage, a bad config, or an address it cannot
// listen on.
func runServe(en *env, so *serveOptions) int {
	stdout, stderr, g := en.stdout, en.stderr, en.g
	listen, printAlerts, printDashboard, output, webConfig := &so.listen, &so.printAlerts, &so.printDashboard, &so.output, &so.webConfig
	switch {
	case *printAlerts && *printDashboard:
		fmt.Fprintln(stderr, "redlockctl serve: --print-alerts and --print-dashboard print one file each: pass one")
		return exitUsage
	case *printAlerts || *printDashboard:
		file, err := printed(*printAlerts, *output)
		if err != nil {
			fmt.Fprintf(stderr, "redlockctl serve: %v\n", err)
			return exitUsage
		}
		if err := file.Write(stdout); err != nil {
			fmt.Fprintf(stderr, "redlockctl serve: write: %v\n", err)
			return exitFailure
		}
		return exitOK
	case *output != "":
		fmt.Fprintf(stderr, "redlockctl serve: -o %s is for --print-alerts or --print-dashboard\n", *output)
		return exitUsage
	}

	scheme := "http"
	if *webConfig != "" {
		if err := web.Validate(*webConfig); err != nil {
			fmt.Fprintf(stderr, "redlockctl serve: --web.config.file %s: %v\n", *webConfig, err)
			return exitUsage
		}
		if b, err := os.ReadFile(*webConfig); err == nil && strings.Contains(string(b), "tls_server_config") {
			scheme = "https"
		}
	}
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl serve: %v\n", err)
		return exitUsage
	}
	defer closePools(pools)
	warn(stderr, g.warnings)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl serve: cannot listen on --listen %q: %v\n", *listen, listenCause(err))
		return exitUsage
	}
	p := poll.NewPoller(cfg, pools)
	defer p.Close()
	o := exportOptions(cfg)
	o.Interval = cfg.Inspect.PollInterval
	e := export.New(o)

	var feed *live.Feed
	hist := openServeHistory(cfg, e, feedUp(&feed), stderr)
	feed = hist.feed(cfg)
	lm, err := export.NewLiveMetrics(cfg.Inspect.Groups, cfg.Inspect.MaxGroups, feed.Status)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl serve: inspect.groups: %v\n", err)
		return exitUsage
	}
	e.Serve(lm)
	feedFirst(p, feed, cfg, func(format string, args ...any) {
		fmt.Fprintf(stderr, "redlockctl serve: "+format+"\n", args...)
	})
	e.WakeOn(p.Woken(), p.PollDelta, p.FullDue)
	e.PaceFed(p.AllFed)
	e.Serve(export.NewReconcileMetrics(o.Masters, p.Mismatches))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hist.run(ctx, stderr)
	defer hist.close()
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		e.Run(ctx, hist.polls(trackedPoll(p, stderr)), cfg.Inspect.PollInterval)
	}()
	feeding := make(chan struct{})
	go func() {
		defer close(feeding)
		// The feeds start once the first poll is recorded: their first whole reads
		// (every key of every master) would otherwise run beside it, while its tables
		// are new and growing (at 5 × 1M keys, the process's peak).
		if !firstPolled(ctx, e) {
			return
		}
		if err := feed.Run(ctx, hist.observe(lm.Observe)); err != nil {
			fmt.Fprintf(stderr, "redlockctl serve: live feed: %v\n", err)
		}
	}()
	srv := &http.Server{
		Handler:           hist.handler(e.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          log.New(stderr, "redlockctl serve: http: ", 0),
	}
	served := make(chan error, 1)
	// exporter-toolkit's web.Serve: TLS and basic auth from --web.config.file (plain
	// HTTP without one). Its own log says only what goes wrong.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { served <- web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: webConfig}, logger) }()
	fmt.Fprintf(stderr, "redlockctl serve: serving %s://%s/metrics for %s (masters: %d, config %s), polling every %v; where a master's live feed is up, its rows follow the feed and its keys are read whole every %v\n",
		scheme, ln.Addr(), cfg.Name, len(cfg.Masters), configName(cfg), cfg.Inspect.PollInterval, cfg.Inspect.ReconcileInterval)

	code := exitOK
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintf(stderr, "redlockctl serve: %v\n", err)
		code = exitFailure
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "redlockctl serve: shutdown: %v\n", err)
		srv.Close()
	}
	<-polling
	<-feeding
	if code == exitOK {
		fmt.Fprintln(stderr, "redlockctl serve: stopped")
	}
	return code
}

// feedFirst makes p keep each master's rows from feed where it is up: the feed's
// changed keys go to p, each master's feed status is asked from feed, and each
// mismatch a reconciliation counts is logged by logf, one line each (serve, the
// console and dump --watch).
func feedFirst(p *poll.Poller, feed *live.Feed, cfg *config.Config, logf func(format string, args ...any)) {
	p.FeedFirst(func(mi int) (bool, int) {
		st := feed.Status()
		if mi >= len(st) {
			return false, 0
		}
		return st[mi].Up && st[mi].Degraded == "", st[mi].Syncs
	}, cfg.Inspect.ReconcileInterval, func(master, key, kind string) {
		logf("reconcile: master %s: key %q: %s (the live feed's row was wrong; fixed)", master, key, kind)
	})
	feed.OnKeys(p.Changed)
}

// firstPolled waits until e has recorded a poll (true) or ctx ends (false).
func firstPolled(ctx context.Context, e *export.Exporter) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !e.Ready() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// printed is the file --print-alerts (alerts true) or --print-dashboard prints in
// format output ("" for the default), from the table of formats.
func printed(alerts bool, output string) (*report.File, error) {
	command := report.CmdPrintDashboard
	if alerts {
		command = report.CmdPrintAlerts
	}
	f, ok := report.DefaultFile(command)
	if output != "" {
		var err error
		if f, err = report.Choose(command, output); err != nil {
			return nil, fmt.Errorf("%s %w", command, err)
		}
	} else if !ok {
		return nil, fmt.Errorf("%s: no default format", command)
	}
	return f.File(command), nil
}

// trackedPoll is serve's poll: rows whose masters stop answering stay, as last seen
// (see package carry). The metrics read only a poll's counts, and a carried row
// changes them only where no master that answered holds it: a carry.Carrier counts
// those, by the rules a carry.Tracker carries rows by, from a few bytes a row that it
// takes from each poll's rows while the exporter tallies them. So every poll is streamed and tallied as its rows are built, and none
// is kept: the poll before is recycled (Poller.Recycle) before the next one reads, and
// a single set of tables is ever live (at 5 × 1M keys, 170 MB less than keeping the
// previous poll beside the one being read). A poll cut off by its context is not
// tracked (serve discards it). Each master that stops answering, and each that
// answers again, is logged to log (see masterLog).
func trackedPoll(p *poll.Poller, log io.Writer) func(context.Context) export.Poll {
	var c carry.Carrier
	var ml masterLog
	var last *poll.Stream // the poll tracked last, tallied by now
	return func(ctx context.Context) export.Poll {
		// Nothing reads the last poll any more: the exporter keeps its figures (no
		// string of its rows), the Carrier its records.
		p.Recycle(last)
		last = nil
		st := p.PollStream(ctx)
		if ctx.Err() != nil {
			return export.Poll{Stream: st}
		}
		c.Track(st)
		ml.log(log, st.Snapshot.Masters)
		last = st
		return export.Poll{Stream: st}
	}
}

// masterLog logs a master's changes of state between polls: down, with why (its error
// kind and error, secrets scrubbed by the poller), and answering again.
type masterLog struct{ down map[string]bool }

func (l *masterLog) log(w io.Writer, masters []inspect.Master) {
	if l.down == nil {
		l.down = map[string]bool{}
	}
	for _, m := range masters {
		switch {
		case !m.Up && !l.down[m.Name]:
			fmt.Fprintf(w, "redlockctl serve: master %s down (%s): %s\n", m.Name, cmp.Or(m.ErrorKind.String(), "other"), m.Error)
		case m.Up && l.down[m.Name]:
			fmt.Fprintf(w, "redlockctl serve: master %s answers again\n", m.Name)
		}
		l.down[m.Name] = !m.Up
	}
}

// exportOptions are the exporter's options from a config: master names in config
// order and the configured resources.
func exportOptions(cfg *config.Config) export.Options {
	o := export.Options{Resources: cfg.Inspect.Resources, Build: Version().BuildInfo}
	for _, m := range cfg.Masters {
		o.Masters = append(o.Masters, m.Name)
	}
	return o
}

// listenCause strips net.Listen's "listen tcp ADDR:" prefix, which repeats the address.
func listenCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
