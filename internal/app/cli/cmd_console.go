package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/carry"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/crashtest"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/ui"
)

// consoleOptions are the flags of console (and of redlockctl without a subcommand).
type consoleOptions struct {
	noLive, record bool
}

func (o *consoleOptions) register(c *cobra.Command) {
	c.Flags().BoolVar(&o.noLive, "no-live", false, "no live feed (CLIENT TRACKING): rows, the LIVE column and the activity pane from polls only")
	c.Flags().BoolVar(&o.record, "record", false, recordFlagHelp)
}

func newConsoleCmd(e *env) *cobra.Command {
	o := &consoleOptions{}
	c := &cobra.Command{
		Use:     "console",
		Short:   "Open the interactive console (the default on a terminal)",
		Long:    "Open the interactive console on the masters. When stdout is not a terminal, print the dump table instead.",
		Example: "  redlockctl console --config /etc/redlockctl/config.toml\n  redlockctl --masters 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 --read-only",
		Args:    noArgs,
		RunE:    e.do(func([]string) int { return runConsole("console", e, o) }),
	}
	o.register(c)
	return c
}

// runConsole is console, or redlockctl without a subcommand (name ""): the console on a
// terminal, the dump table otherwise.
func runConsole(name string, e *env, o *consoleOptions) int {
	prog := strings.TrimSpace("redlockctl " + name)
	cfg, pools, err := e.g.load()
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", prog, err)
		return exitUsage
	}
	defer closePools(pools)
	warn(e.stderr, e.g.warnings)
	if o.record && o.noLive {
		fmt.Fprintf(e.stderr, "%s: --record records what the live feed reports: it cannot go with --no-live\n", prog)
		return exitUsage
	}
	return runConsoleOn(cfg, pools, consoleRun{live: !o.noLive, record: o.record}, e.stdout, e.stderr)
}

// consoleRun is how runConsoleOn runs the console.
type consoleRun struct {
	live   bool   // follow the masters with the live feed
	record bool   // record what it reports to the history store (needs live)
	notice string // on the status line from the start
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// runConsoleOn runs the console on cfg's masters until the operator quits; when stdout
// is not a terminal it polls once and prints the dump table (exit code as dump). In
// read-only mode no redlock client is created and the Admin refuses every action.
// The detail view reads cfg's history store, which it records to with r.record.
func runConsoleOn(cfg *config.Config, pools []*redis.Pool, r consoleRun, stdout, stderr io.Writer) int {
	withLive, notice := r.live, r.notice
	poller := poll.NewPoller(cfg, pools)
	defer poller.Close()
	if !isTerminal(stdout) {
		if r.record {
			fmt.Fprintln(stderr, "redlockctl console: --record: stdout is not a terminal: the table is printed once and nothing is recorded (redlockctl events --record records without one)")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*cfg.Inspect.Timeout+time.Second)
		defer cancel()
		snap := poller.Poll(ctx)
		if err := report.WriteTable(stdout, snap); err != nil {
			fmt.Fprintf(stderr, "redlockctl: %v\n", err)
			return exitFailure
		}
		return inspect.ExitCode(snap)
	}
	var client *redlock.Client
	if !cfg.ReadOnly {
		var err error
		client, err = cfg.Client(pools, cfg.LockOptions()...)
		if err != nil {
			fmt.Fprintf(stderr, "redlockctl: %v\n", err)
			return exitFailure
		}
		defer client.Close()
	}
	var feed *live.Feed
	var hist *serveHistory
	var histLog, reconLog logLines
	if withLive {
		// Feed-first: where a master's feed is up, a poll reads only the keys it
		// said changed (and a reconciliation's share), and a change polls at once.
		feed = live.New(cfg)
		feedFirst(poller, feed, cfg, func(format string, args ...any) {
			// Printed when the console exits: each says when it was found.
			reconLog.log("%s at %s", fmt.Sprintf(format, args...), time.Now().Format("15:04:05.000"))
		})
	}
	if r.record {
		var err error
		if hist, err = openRecording("console", cfg, &feed, histLog.log); err != nil {
			fmt.Fprintf(stderr, "redlockctl console: %v\n", err)
			return exitFailure
		}
	}
	defer consoleGC()()
	admin := admin.New(cfg, client, pools)
	// Rows whose masters stop answering stay, as last seen. While every master answers
	// there is nothing to carry: the console keeps the poll's compact tables and its own
	// compact rows, and builds a row whole only to draw or open it; otherwise the
	// snapshot is built whole and tracked.
	var tr carry.Tracker
	polled := make(chan struct{}) // closed when the first poll has returned
	var once sync.Once
	// A wake's poll reads the changes alone, into a copy of the tables the console
	// draws from, and the table is patched with the rows it judged.
	delta := func(ctx context.Context, st *poll.Stream) *poll.Delta {
		crashtest.Point("poll")
		d := poller.PollDeltaOf(ctx, st)
		if d != nil && d.Stream != nil && tr.TrackStream(d.Stream) != nil {
			return nil // rows to carry (none while every master answers): a whole poll
		}
		return d
	}
	poll := func(ctx context.Context) *poll.Stream {
		defer once.Do(func() { close(polled) })
		// What the poll before last left is dead by now: collected first, the heap may
		// grow from what the console holds, not from that as well.
		runtime.GC()
		crashtest.Point("poll")
		st := poller.PollStream(ctx)
		if hist != nil && ctx.Err() == nil && st != nil {
			hist.rec.Masters(st.Snapshot.Masters, st.Snapshot.Findings)
		}
		if whole := tr.TrackStream(st); whole != nil {
			return poll.StreamOf(whole)
		}
		return st
	}
	opts := ui.Options{Config: cfg, Poll: poll, Actions: admin, Notice: notice, History: consoleHistory(cfg, hist)}
	if withLive {
		opts.Woken = poller.Woken()
		opts.Delta = delta
		opts.Fed = poller.AllFed
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if hist != nil {
		hist.run(ctx, stderr)
		defer func() {
			stop()
			hist.close() // the recorder's last write
			for _, l := range histLog.all() {
				fmt.Fprintln(stderr, "redlockctl console: history:", l)
			}
		}()
	}
	var liveCh chan live.Event
	if withLive {
		liveCh = make(chan live.Event, liveBuffer)
		opts.Live = liveCh
	}
	m := ui.New(opts)
	c := &crash{}
	c.prog = tea.NewProgram(guardedModel{m, c}, tea.WithOutput(stdout))
	if withLive {
		go runLive(ctx, feed, hist.observe(func(live.Event) {}), liveCh, polled, c, stderr)
	}
	_, err := c.prog.Run()
	stop() // the live feed ends before anything is printed
	for _, line := range m.ExitReport() {
		fmt.Fprintln(stderr, "redlockctl:", line)
	}
	for _, l := range reconLog.all() {
		fmt.Fprintln(stderr, "redlockctl console:", l)
	}
	if c.report(stderr) {
		return exitInternal
	}
	if err != nil && !errors.Is(err, tea.ErrInterrupted) {
		fmt.Fprintf(stderr, "redlockctl: console: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// liveBuffer is how many live events wait for the console (it takes them in batches
// every 100 ms).
const liveBuffer = 1 << 14

// runLive runs the live feed until ctx ends, its events on ch, which it closes when it
// stops (the console says so). It starts once polled is closed (the first poll has
// returned), as serve's does: the feed's first whole reads, of every key on every
// master, would otherwise run beside that poll, while its tables are new and growing.
// A panic that reaches it stops the console through c. Every event goes to record
// first.
func runLive(ctx context.Context, feed *live.Feed, record func(live.Event), ch chan<- live.Event, polled <-chan struct{}, c *crash, stderr io.Writer) {
	defer close(ch)
	defer c.guard()
	select {
	case <-polled:
	case <-ctx.Done():
		return
	}
	err := feed.Run(ctx, func(e live.Event) {
		crashtest.Point("live")
		record(e)
		select {
		case ch <- e:
		case <-ctx.Done():
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl: live feed: %v\n", err)
	}
}

// consoleGCPercent paces the garbage collector for the console. It holds a poll's
// compact tables and its own rows of them, and while the next poll is read and its
// rows built, that poll's as well: nearly everything it allocates lives until the next
// poll replaces it, so that at the default pace (100) the heap grows to twice the
// memory of two polls before a collection.
const consoleGCPercent = 50

// consoleGC sets the console's garbage collector pace, unless the user set GOGC, and
// returns what restores it.
func consoleGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gc := debug.SetGCPercent(consoleGCPercent)
	return func() { debug.SetGCPercent(gc) }
}
