package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/report"
)

// eventsFlush is how often a quiet events stream is flushed to its writer.
const eventsFlush = 100 * time.Millisecond

// eventsOptions are the flags of events.
type eventsOptions struct {
	format, filter string
	duration       time.Duration
	record         bool
}

func newEventsCmd(e *env) *cobra.Command {
	o := &eventsOptions{}
	c := &cobra.Command{
		Use:     "events",
		Short:   "Stream every lock acquisition, release and expiry as it happens",
		Long:    "Follow every master live (CLIENT TRACKING; never a write) and print one line per lock lifecycle event: acquired, extended, released, expired, contended, and gap/resync where the feed could not see. One lifecycle is one acquired and one end event, however many masters hold the lock.\n\nSIGINT and SIGTERM end it with exit 0.",
		Example: "  redlockctl events\n  redlockctl events -o ndjson --filter 'billing:* state:expired' >> /var/log/redlockctl/events.ndjson",
		Args:    noArgs,
		RunE:    e.do(func([]string) int { return runEvents(e, o) }),
	}
	outputFlag(c, &o.format, "table", "output: "+report.FormatNames(report.CmdEvents)+" (json and ndjson: one JSON object per event and line)", report.Names(report.CmdEvents)...)
	c.Flags().StringVar(&o.filter, "filter", "", "only the lifecycles matching FILTER (docs/scripting.md: Filters; state: is the event, e.g. state:expired); gaps are always shown")
	c.Flags().DurationVar(&o.duration, "duration", 0, "stop after D (0: until interrupted)")
	c.Flags().BoolVar(&o.record, "record", false, recordFlagHelp+" (every lifecycle, whatever --filter prints)")
	return c
}

// runEvents streams lock lifecycle events: `events [-o table|ndjson] [--filter FILTER]
// [--duration D]`. SIGINT and SIGTERM end it with exit 0.
func runEvents(e *env, o *eventsOptions) int {
	stdout, stderr, g := e.stdout, e.stderr, e.g
	format, filter, duration := &o.format, &o.filter, &o.duration
	f, err := report.Choose(report.CmdEvents, *format)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl events: %v\n", err)
		return exitUsage
	}
	q, err := inspect.ParseQuery(*filter)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl events: --filter: %v\n", err)
		return exitUsage
	}
	if *duration < 0 {
		fmt.Fprintln(stderr, "redlockctl events: --duration must not be negative")
		return exitUsage
	}
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl events: %v\n", err)
		return exitUsage
	}
	closePools(pools) // the feed dials connections of its own
	warn(stderr, g.warnings)
	feed := live.New(cfg)
	var hist *serveHistory
	if o.record {
		if hist, err = openRecording("events", cfg, &feed, func(format string, args ...any) {
			fmt.Fprintf(stderr, "redlockctl events: history: "+format+"\n", args...)
		}); err != nil {
			fmt.Fprintf(stderr, "redlockctl events: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stderr, "redlockctl events: recording every lock lifecycle to %s\n", cfg.History.Dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	out := &eventWriter{w: bufio.NewWriterSize(stdout, 64<<10), f: f, rc: reportContext(cfg)}
	if f.EventHeader != nil {
		if err := f.EventHeader(out.w, out.rc); err != nil {
			fmt.Fprintf(stderr, "redlockctl events: write: %v\n", err)
			return exitFailure
		}
	}
	done := make(chan struct{})
	go out.flushEvery(eventsFlush, done)
	var werr error
	if hist != nil {
		hist.run(ctx, stderr)
		defer func() { stop(); hist.close() }()
	}
	record := hist.observe(func(live.Event) {})
	err = feed.Run(ctx, func(e live.Event) {
		record(e)
		if e.Match(q) {
			if err := out.write(e); err != nil && werr == nil {
				werr = err
				stop()
			}
		}
	})
	close(done)
	if ferr := out.flush(); werr == nil {
		werr = ferr
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "redlockctl events: %v\n", err)
		return exitUsage
	case werr != nil:
		fmt.Fprintf(stderr, "redlockctl events: write: %v\n", werr)
		return exitFailure
	}
	return exitOK
}

// eventWriter writes events buffered, flushed at least every eventsFlush.
type eventWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
	f  report.Format
	rc report.Context
}

func (o *eventWriter) write(e live.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.f.Event(o.w, e, o.rc)
}

func (o *eventWriter) flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Flush()
}

func (o *eventWriter) flushEvery(d time.Duration, done <-chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			o.flush()
		}
	}
}
