package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/gomodule/redigo/redis"

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

// runConsole opens the interactive console: `console [--config F] [--masters a,b,c]
// [--read-only]`. When stdout is not a terminal it prints the dump table instead.
func runConsole(args []string, stdout, stderr io.Writer) int {
	return consoleMain("console", args, stdout, stderr)
}

// runDefault is redlockctl without a subcommand: the console on a terminal, the dump
// table otherwise.
func runDefault(args []string, stdout, stderr io.Writer) int {
	return consoleMain("", args, stdout, stderr)
}

func consoleMain(name string, args []string, stdout, stderr io.Writer) int {
	prog := "redlockctl"
	if name != "" {
		prog += " " + name
	}
	fs := newFlags(name, stderr)
	g := addGlobalFlags(fs)
	noLive := fs.Bool("no-live", false, "no live feed (CLIENT TRACKING): rows, the LIVE column and the activity pane from polls only")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [--config FILE | --masters host:port,...] [--read-only] [--no-live]\n", prog)
		fmt.Fprintln(stderr, "Opens the console on a terminal; prints the dump table when stdout is not one.")
		fs.PrintDefaults()
	}
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitUsage
	}
	defer closePools(pools)
	warn(stderr, g.warnings)
	return runConsoleOn(cfg, pools, !*noLive, stdout, stderr)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// runConsoleOn runs the console on cfg's masters until the operator quits; when stdout
// is not a terminal it polls once and prints the dump table (exit code as dump). In
// read-only mode no redlock client is created and the Admin refuses every action.
func runConsoleOn(cfg *config.Config, pools []*redis.Pool, withLive bool, stdout, stderr io.Writer) int {
	poller := poll.NewPoller(cfg, pools)
	defer poller.Close()
	if !isTerminal(stdout) {
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
	defer consoleGC()()
	admin := admin.New(cfg, client, pools)
	// Rows whose masters stop answering stay, as last seen. While every master answers
	// there is nothing to carry: the console keeps the poll's compact tables and its own
	// compact rows, and builds a row whole only to draw or open it; otherwise the
	// snapshot is built whole and tracked.
	var tr carry.Tracker
	polled := make(chan struct{}) // closed when the first poll has returned
	var once sync.Once
	poll := func(ctx context.Context) *poll.Stream {
		defer once.Do(func() { close(polled) })
		// What the poll before last left is dead by now: collected first, the heap may
		// grow from what the console holds, not from that as well.
		runtime.GC()
		crashtest.Point("poll")
		st := poller.PollStream(ctx)
		if whole := tr.TrackStream(st); whole != nil {
			return poll.StreamOf(whole)
		}
		return st
	}
	opts := ui.Options{Config: cfg, Poll: poll, Actions: admin}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var liveCh chan live.Event
	if withLive {
		liveCh = make(chan live.Event, liveBuffer)
		opts.Live = liveCh
	}
	m := ui.New(opts)
	c := &crash{}
	c.prog = tea.NewProgram(guardedModel{m, c}, tea.WithOutput(stdout))
	if withLive {
		go runLive(ctx, cfg, liveCh, polled, c, stderr)
	}
	_, err := c.prog.Run()
	stop() // the live feed ends before anything is printed
	for _, line := range m.ExitReport() {
		fmt.Fprintln(stderr, "redlockctl:", line)
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
// A panic that reaches it stops the console through c.
func runLive(ctx context.Context, cfg *config.Config, ch chan<- live.Event, polled <-chan struct{}, c *crash, stderr io.Writer) {
	defer close(ch)
	defer c.guard()
	select {
	case <-polled:
	case <-ctx.Done():
		return
	}
	err := live.New(cfg).Run(ctx, func(e live.Event) {
		crashtest.Point("live")
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
