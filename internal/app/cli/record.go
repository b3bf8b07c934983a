package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/history"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/ui"
)

// recordFlagHelp is the help of --record, on events and the console.
const recordFlagHelp = "record every lock lifecycle the live feed reports to the history store ([history] dir), as serve does; " +
	"an error if another process (a running serve) has the store"

// openRecording opens cfg's history store for `prog --record` (events, console), on
// feed: an error that says what is wrong when [history] dir is off or another
// process has the store.
func openRecording(prog string, cfg *config.Config, feed **live.Feed, log func(format string, args ...any)) (*serveHistory, error) {
	if cfg.History.Dir == "" {
		return nil, fmt.Errorf("--record: [history] dir is off: set it to a directory to record to")
	}
	h, err := openRecorder(cfg, feedUp(feed), log)
	if err != nil {
		return nil, fmt.Errorf("--record: %v", err)
	}
	h.prog = prog
	return h, nil
}

// logLines keeps the last lines a recorder logs while the console has the screen,
// for the exit report.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) log(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 20 {
		l.lines = l.lines[1:]
	}
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// storedWindows are the windows the console's detail view reads a resource's
// recorded lifecycles in, the shortest first, until one holds enough of them.
var storedWindows = []time.Duration{time.Hour, 24 * time.Hour}

// storedEnough is how many lifecycles end the widening of the window.
const storedEnough = 10

// consoleHistory is the console's reader of cfg's history store (nil: none is
// configured): rec's store while the console records to it, otherwise the store opened
// read-only for each read and closed at once, so that a serve starting meanwhile
// can take it.
func consoleHistory(cfg *config.Config, rec *serveHistory) ui.HistoryReader {
	if cfg.History.Dir == "" && cfg.History.URL == "" {
		return nil
	}
	dir, maxAge := cfg.History.Dir, cfg.History.MaxAge
	return func(ctx context.Context, resource string) (history.Result, error) {
		var s history.Backend
		if rec != nil {
			s = rec.store
		} else {
			var err error
			s, err = history.OpenConfig(cfg.History, true)
			if errors.Is(err, os.ErrNotExist) {
				return history.Result{}, fmt.Errorf("nothing recorded here: no store at %s (serve records to it; or run the console with --record)", filepath.Join(dir, "history.db"))
			}
			if err != nil {
				return history.Result{}, err
			}
			defer s.Close()
		}
		now := time.Now()
		windows := append(slices.Clone(storedWindows), maxAge)
		var res history.Result
		for _, w := range windows {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			var err error
			res, err = s.Lifecycles(history.Filter{Select: history.Select{Resources: []string{resource}}, Since: now.Add(-w)}, now)
			// A name with glob characters selects others too: keep its own.
			res.Lifecycles = slices.DeleteFunc(res.Lifecycles, func(l history.Lifecycle) bool { return l.Resource != resource })
			if err != nil || len(res.Lifecycles) >= storedEnough {
				return res, err
			}
		}
		return res, nil
	}
}
