package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/report"
)

// eventsFlush is how often a quiet events stream is flushed to its writer.
const eventsFlush = 100 * time.Millisecond

// runEvents streams lock lifecycle events: `events [-o table|ndjson] [--filter FILTER]
// [--duration D]`. SIGINT and SIGTERM end it with exit 0.
func runEvents(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("events", stderr)
	g := addGlobalFlags(fs)
	format := outputFlag(fs, "table", "table or ndjson (one JSON object per event and line)")
	filter := fs.String("filter", "", "only the lifecycles matching FILTER (README: Filters; state: is the event, e.g. state:expired); gaps are always shown")
	duration := fs.Duration("duration", 0, "stop after D (0: until interrupted)")
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	if !slices.Contains(report.EventFormats, *format) {
		fmt.Fprintf(stderr, "redlockctl events: -o %q: want %s\n", *format, strings.Join(report.EventFormats, " or "))
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	out := &eventWriter{w: bufio.NewWriterSize(stdout, 64<<10), format: *format}
	done := make(chan struct{})
	go out.flushEvery(eventsFlush, done)
	var werr error
	err = live.New(cfg).Run(ctx, func(e live.Event) {
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
	mu     sync.Mutex
	w      *bufio.Writer
	format string
}

func (o *eventWriter) write(e live.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return report.WriteEvent(o.w, o.format, e)
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
