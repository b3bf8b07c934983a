package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockctl/redlockctl/history"
	"github.com/redlockctl/redlockctl/inspect/export"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/internal/config"
)

// serveHistory is what serve records to its history store ([history] dir), and
// the store's answers on /api/v1/history; events and the console record through
// it too (--record). A nil *serveHistory records nothing.
type serveHistory struct {
	prog  string // the command that records: serve, events, console
	store history.Backend
	rec   *history.Recorder
	done  chan struct{}
}

// openServeHistory opens cfg's history store for serve (feedUp: whether the feed
// follows every master, see history.RecorderOptions), and registers the
// recorder's metrics (and redlockctl_history_recording) with e. A store that cannot
// be opened (another serve records to it, a directory it may not write) is said on
// stderr, and serve runs on without recording: nil, as with dir = "off".
func openServeHistory(cfg *config.Config, e *export.Exporter, feedUp func() bool, stderr io.Writer) *serveHistory {
	recording := prometheus.NewGauge(prometheus.GaugeOpts{Name: "redlockctl_history_recording",
		Help: "1 while serve records lock lifecycles to its history store ([history] dir), 0 when it does not."})
	e.Serve(recording)
	if cfg.History.Dir == "" && cfg.History.URL == "" {
		return nil
	}
	h, err := openRecorder(cfg, feedUp, func(format string, args ...any) { fmt.Fprintf(stderr, "redlockctl serve: "+format+"\n", args...) })
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl: warning: %v: serve records no history (set [history] dir or url, or dir = \"off\")\n", err)
		return nil
	}
	h.prog = "serve"
	for _, c := range h.rec.Collectors() {
		e.Serve(c)
	}
	recording.Set(1)
	fmt.Fprintf(stderr, "redlockctl serve: recording every lock lifecycle to %s (%s on this server)\n", cfg.History.Where(), history.Path)
	return h
}

// openRecorder opens cfg's history store ([history] dir, which must not be off, or url)
// for writing, with a recorder on it: serve records through it, and events and the
// console with --record. Another process holding the store is an error within a
// second, naming it.
func openRecorder(cfg *config.Config, feedUp func() bool, log func(format string, args ...any)) (*serveHistory, error) {
	s, err := history.OpenConfig(cfg.History, false)
	if err != nil {
		return nil, err
	}
	rec, err := history.NewRecorder(s, history.RecorderOptions{AuditLog: cfg.AuditLog, FeedUp: feedUp, Log: log})
	if err != nil {
		s.Close()
		return nil, err
	}
	return &serveHistory{store: s, rec: rec, done: make(chan struct{})}, nil
}

// feedUp reports whether feed follows every master (read whole, not in a gap; or
// polled, degraded).
func feedUp(feed **live.Feed) func() bool {
	return func() bool {
		for _, st := range (*feed).Status() {
			if !st.Up && st.Degraded == "" {
				return false
			}
		}
		return true
	}
}

// feed returns the live feed serve runs: without values when nothing is recorded
// (the metrics count events and show no value).
func (h *serveHistory) feed(cfg *config.Config) *live.Feed {
	if h == nil {
		return live.New(cfg).WithoutValues()
	}
	return live.New(cfg)
}

// observe returns emit, also recording every event.
func (h *serveHistory) observe(emit func(live.Event)) func(live.Event) {
	if h == nil {
		return emit
	}
	return func(e live.Event) { emit(e); h.rec.Observe(e) }
}

// polls returns poll, also recording its masters' transitions and findings.
func (h *serveHistory) polls(poll func(context.Context) export.Poll) func(context.Context) export.Poll {
	if h == nil {
		return poll
	}
	return func(ctx context.Context) export.Poll {
		p := poll(ctx)
		if ctx.Err() == nil && p.Stream != nil {
			h.rec.Masters(p.Stream.Snapshot.Masters, p.Stream.Snapshot.Findings)
		}
		return p
	}
}

// handler returns next with /api/v1/history beside it.
func (h *serveHistory) handler(next http.Handler) http.Handler {
	if h == nil {
		return next
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+history.Path, history.Handler(h.store))
	mux.Handle("/", next)
	return mux
}

// run records until ctx ends.
func (h *serveHistory) run(ctx context.Context, stderr io.Writer) {
	if h == nil {
		return
	}
	go func() {
		defer close(h.done)
		if err := h.rec.Run(ctx); err != nil {
			fmt.Fprintf(stderr, "redlockctl %s: history: last write: %v\n", h.prog, err)
		}
	}()
}

// close waits for the recorder's last write and closes the store.
func (h *serveHistory) close() {
	if h == nil {
		return
	}
	<-h.done
	h.store.Close()
}
