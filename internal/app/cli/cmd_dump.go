package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/carry"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
)

// outputFlags are the flags dump and doctor share.
type outputFlags struct {
	format string
	f      report.Format // the format named by format (check)
	watch  time.Duration
	filter string
	only   string
	count  int
	noLive bool // dump --watch --no-live
}

func addOutputFlags(c *cobra.Command, command string) *outputFlags {
	o := &outputFlags{}
	outputFlag(c, &o.format, "table", report.FormatHelp(), report.Names(command)...)
	fs := c.Flags()
	fs.DurationVar(&o.watch, "watch", 0, "poll every DURATION and print each snapshot until interrupted")
	fs.StringVar(&o.filter, "filter", "", "only the rows matching FILTER: words, all must match; owner:, lib:, state:, value: name a field; a word with * ? [ is a glob, else a case-insensitive substring (docs/scripting.md: Filters)")
	fs.StringVar(&o.only, "only", "", `"anomalies": only rows with anomalies or a split/no-ttl/foreign state`)
	fs.IntVar(&o.count, "count", 0, "with --watch: stop after N snapshots (0: until interrupted)")
	c.RegisterFlagCompletionFunc("only", cobra.FixedCompletions([]string{"anomalies"}, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// check validates the flags for command ("dump" or "doctor").
func (o *outputFlags) check(command string) error {
	f, ok := report.Lookup(o.format)
	switch {
	case !ok || !f.Takes(report.CmdDump) && !f.Takes(command):
		return fmt.Errorf("-o %q: want %s", o.format, report.FormatNames(command))
	case !f.Takes(command):
		return fmt.Errorf("-o %s is for dump (and serve); doctor takes %s", o.format, report.FormatNames(command))
	case o.noLive && o.watch <= 0:
		return errors.New("--no-live goes with --watch: a dump without it reads every key once, with no live feed")
	case o.watch > 0 && f.Snapshot == nil:
		return fmt.Errorf("-o %s prints one snapshot per run: run it periodically (or use serve) instead of --watch", o.format)
	}
	o.f = f
	if o.filter != "" {
		if _, err := inspect.ParseQuery(o.filter); err != nil {
			return fmt.Errorf("--filter: %v", err)
		}
	}
	if o.only != "" && o.only != "anomalies" {
		return fmt.Errorf("--only %q: the only choice is \"anomalies\"", o.only)
	}
	if o.watch < 0 || o.count < 0 {
		return errors.New("--watch and --count must not be negative")
	}
	return nil
}

// checked validates o for command before the run function f runs.
func (o *outputFlags) checked(e *env, command string, f func() int) int {
	if err := o.check(command); err != nil {
		fmt.Fprintf(e.stderr, "redlockctl %s: %v\n", command, err)
		return exitUsage
	}
	return f()
}

func newDumpCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "dump",
		Short:   "Print every lock on every master (table, json, ndjson, prometheus)",
		Long:    "Poll every master once (or every --watch), judge each lock across them and print it.",
		Example: "  redlockctl dump -o json\n  redlockctl dump --filter 'billing:*' --only anomalies\n  redlockctl dump --watch 5s -o ndjson",
		Args:    noArgs,
	}
	o := addOutputFlags(c, "dump")
	c.Flags().BoolVar(&o.noLive, "no-live", false, "with --watch: no live feed (CLIENT TRACKING): every snapshot reads every key")
	c.RunE = e.do(func([]string) int { return o.checked(e, "dump", func() int { return runDump(e, o) }) })
	return c
}

// runDump prints every lock on every master: `dump [-o table|json|ndjson|prometheus] [--watch D]
// [--filter FILTER] [--only anomalies]`. Exit codes: 0 nothing to report, 3 findings,
// anomalies or a master down, 1 fewer than a quorum reachable, 2 bad usage or config.
func runDump(e *env, o *outputFlags) int {
	stdout, stderr := e.stdout, e.stderr
	p, cfg, closeAll, code := openPoller("dump", e.g, stderr)
	if p == nil {
		return code
	}
	defer closeAll()
	growPipe(stdout)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rc := reportContext(cfg)
	if o.watch <= 0 {
		return dumpOnce(ctx, p, o, rc, stdout, stderr)
	}
	firstPoll := func() {}
	if !o.noLive {
		// Feed-first, as serve: where a master's feed is up, each snapshot reads only
		// the keys it said changed, and every key once a reconciliation is due.
		var done func()
		firstPoll, done = watchFeed(ctx, p, cfg, stderr)
		defer done()
	}
	// Rows whose masters stop answering stay, as last seen: while every master answers
	// there is nothing to carry, and each snapshot is written as its rows are built
	// (the tracker builds them only if a later poll carries from them); otherwise the
	// whole snapshot is built, tracked and written.
	var tr carry.Tracker
	type polled struct {
		st    *poll.Stream
		whole *inspect.Snapshot // non-nil: write this instead of st
	}
	poll := func(ctx context.Context) polled {
		st := pollLean(ctx, p)
		firstPoll()
		if ctx.Err() != nil {
			// Interrupted mid-poll: pollLoop writes nothing more, and tracking would
			// carry every row from the previous poll (its masters all cut off) first.
			return polled{st: st}
		}
		return polled{st, tr.TrackStream(st)}
	}
	write := func(r polled) (int, error) {
		var code int
		var err error
		if r.whole != nil {
			s := inspect.Filter(r.whole, o.filter, o.only == "anomalies")
			err = o.f.Snapshot(stdout, s, rc)
			code = inspect.ExitCode(s)
		} else {
			err = writeStream(stdout, r.st, o, rc)
			code = r.st.ExitCode()
		}
		if o.f.Between != "" && err == nil {
			_, err = io.WriteString(stdout, o.f.Between)
		}
		return code, err
	}
	return pollLoop(ctx, poll, o.watch, o.count, write, stderr)
}

// watchFeed makes p feed-first for dump --watch: a live feed follows cfg's masters
// from the first poll on (its first whole reads would otherwise run beside that
// poll), its events unprinted. It returns what to call after each poll, and what
// stops the feed and waits for it.
func watchFeed(ctx context.Context, p *poll.Poller, cfg *config.Config, stderr io.Writer) (polled, stop func()) {
	feed := live.New(cfg)
	feedFirst(p, feed, cfg, func(format string, args ...any) {
		fmt.Fprintf(stderr, "redlockctl dump: "+format+"\n", args...)
	})
	ctx, cancel := context.WithCancel(ctx)
	first := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-first:
		case <-ctx.Done():
			return
		}
		if err := feed.Run(ctx, func(live.Event) {}); err != nil {
			fmt.Fprintf(stderr, "redlockctl dump: live feed: %v\n", err)
		}
	}()
	return func() { once.Do(func() { close(first) }) }, func() { cancel(); <-done }
}

// writeStream writes the rows of st, filtered as o says, as they are built, in o's
// format.
func writeStream(w io.Writer, st *poll.Stream, o *outputFlags, rc report.Context) error {
	st.Filter(o.filter, o.only == "anomalies")
	return o.f.Stream(w, st, rc)
}

// reportContext is what the formats may need of the config.
func reportContext(cfg *config.Config) report.Context {
	rc := report.Context{Resources: cfg.Inspect.Resources}
	for _, m := range cfg.Masters {
		rc.Masters = append(rc.Masters, m.Name)
	}
	return rc
}

// dumpOnce is a dump without --watch: one poll, whose rows are built while they are
// written, a chunk at a time, so that they never all exist at once.
func dumpOnce(ctx context.Context, p *poll.Poller, o *outputFlags, rc report.Context, stdout, stderr io.Writer) int {
	defer oneShotGC()()
	start := time.Now()
	st := p.PollStream(ctx)
	rc.Took = time.Since(start)
	if err := writeStream(stdout, st, o, rc); err != nil {
		fmt.Fprintf(stderr, "redlockctl: write: %v\n", err)
		return exitFailure
	}
	return st.ExitCode()
}

// onceHeap is the heap size below which a one-shot dump never collects garbage.
const onceHeap = 512 << 20

// oneShotGC sets the garbage collector for a one-shot poll and returns what restores
// it. Until the command exits, nearly all a one-shot poll allocates stays live (the
// poll's tables): collecting is wasted work (a sixth of the client's CPU at 100k keys,
// much of it stopping busy goroutines). The collector runs only near onceHeap, or
// near a lower GOMEMLIMIT.
func oneShotGC() (restore func()) {
	gc := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(min(onceHeap, debug.SetMemoryLimit(-1)))
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gc)
	}
}

// pollLoop polls once, or every watch until ctx ends or count snapshots were written
// (the interval stretches when a poll takes longer), and returns the exit code of the
// last snapshot.
func pollLoop[T any](ctx context.Context, poll func(context.Context) T, watch time.Duration, count int, write func(T) (int, error), stderr io.Writer) int {
	code := exitOK
	for n := 1; ; n++ {
		start := time.Now()
		s := poll(ctx)
		if ctx.Err() != nil && watch > 0 {
			return code // interrupted mid-poll: the last complete snapshot's code
		}
		c, err := write(s)
		if err != nil {
			fmt.Fprintf(stderr, "redlockctl: write: %v\n", err)
			return exitFailure
		}
		code = c
		if watch <= 0 || (count > 0 && n >= count) {
			return code
		}
		t := time.NewTimer(time.Until(start.Add(watch)))
		select {
		case <-ctx.Done():
			t.Stop()
			return code
		case <-t.C:
		}
	}
}

// pollLean polls with the collector paced for a poll (inspect.Lean). What the poll
// before last left is collected first, so that --watch holds at most two polls'
// tables at a time.
func pollLean(ctx context.Context, p *poll.Poller) *poll.Stream {
	return wire.Lean(func() *poll.Stream { return p.PollStream(ctx) })
}

func newDoctorCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "doctor",
		Short:   "Check the masters' setup and clocks",
		Long:    "Sample the masters for --duration (clock rates need several samples), then print every finding with its fix.",
		Example: "  redlockctl doctor\n  redlockctl doctor --duration 10s -o json",
		Args:    noArgs,
	}
	o := addOutputFlags(c, "doctor")
	d := &doctorOptions{}
	c.Flags().DurationVar(&d.duration, "duration", 3*time.Second, "how long to sample clocks before judging (0: one poll)")
	c.Flags().DurationVar(&d.interval, "interval", 250*time.Millisecond, "time between clock samples")
	c.RunE = e.do(func([]string) int { return o.checked(e, "doctor", func() int { return runDoctor(e, o, d) }) })
	return c
}

// doctorOptions are doctor's own flags.
type doctorOptions struct {
	duration, interval time.Duration
}

// runDoctor checks the masters' setup and clocks: it polls for --duration (so that
// clock rates and jumps can be measured), then prints every finding with its fix.
// Same output flags and exit codes as dump (rows do not count, only findings).
func runDoctor(e *env, o *outputFlags, d *doctorOptions) int {
	stdout, stderr, g := e.stdout, e.stderr, e.g
	duration, interval := d.duration, d.interval
	if duration < 0 || interval <= 0 {
		fmt.Fprintln(stderr, "redlockctl doctor: --duration must be >= 0 and --interval > 0")
		return exitUsage
	}
	p, _, closeAll, code := openPoller("doctor", g, stderr)
	if p == nil {
		return code
	}
	defer closeAll()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	write := func(s *inspect.Snapshot) (int, error) {
		s = inspect.Filter(s, o.filter, o.only == "anomalies")
		d := *s
		d.Resources = []inspect.Resource{}
		d.Summary.Resources, d.Summary.Held, d.Summary.Partial, d.Summary.Split = 0, 0, 0, 0
		d.Summary.NoTTL, d.Summary.Foreign, d.Summary.Free = 0, 0, 0
		return inspect.ExitCode(&d), o.f.Doctor(stdout, &d)
	}
	// Sample clocks first (their rates need several samples), then poll and report. On
	// a terminal a progress line says what the wait is for, rewritten in place each
	// second and cleared at the end.
	progress := stderrIsTerminal(stderr) && duration >= time.Second
	begin, shown := time.Now(), time.Duration(-1)
	for end := begin.Add(duration); time.Now().Before(end) && ctx.Err() == nil; {
		if s := time.Since(begin).Truncate(time.Second); progress && s > shown {
			shown = s
			fmt.Fprintf(stderr, "\rredlockctl doctor: sampling the masters' clocks: %v of %v (interrupt to stop)\x1b[K", s, duration)
		}
		start := time.Now()
		p.SampleClocks(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(interval))):
		}
	}
	if progress {
		fmt.Fprint(stderr, "\r\x1b[K")
	}
	if ctx.Err() != nil {
		return exitFailure
	}
	// The doctor prints no rows: the poll builds none (a PollStream never asked for
	// them), and keeps none.
	poll := func(ctx context.Context) *inspect.Snapshot { return p.PollStream(ctx).Snapshot }
	return pollLoop(ctx, poll, o.watch, o.count, write, stderr)
}

// stderrIsTerminal says whether w, where progress lines go, is a terminal (tests
// replace it).
var stderrIsTerminal = isTerminal

// openPoller loads the config for command name and returns a poller over its masters,
// the config, and the function that closes both; a nil poller means exit with code.
func openPoller(name string, g *globalFlags, stderr io.Writer) (*poll.Poller, *config.Config, func(), int) {
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return nil, nil, nil, exitUsage
	}
	warn(stderr, g.warnings)
	p := poll.NewPoller(cfg, pools).WithoutEvents() // dump and doctor print no events
	return p, cfg, func() { p.Close(); closePools(pools) }, exitOK
}

func warn(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "redlockctl: warning: %s\n", s)
	}
}
