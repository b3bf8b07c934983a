package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// auditEvery is how often the audit log is read for new force-releases.
const auditEvery = 100 * time.Millisecond

// forceWindow is how long after a force-release's audited intent the end of its
// lock's lifecycle is taken as that force-release.
const forceWindow = 10 * time.Second

// forceHold is how long events wait before they are emitted while the audit log is
// followed: long enough for a force-release's intent, written before its first
// command, to be read, so that the end it causes is named force-released.
const forceHold = 3 * auditEvery

// auditLine is what the feed reads of an audit log line (admin.ActionResult).
type auditLine struct {
	Phase    string    `json:"phase"`
	Time     time.Time `json:"time"`
	Action   string    `json:"action"`
	Resource string    `json:"resource"`
}

// watchAudit follows the audit log at path from its current end until ctx ends, and
// sends a sigForce for every force-release intent written to it: an operator's
// force-release through redlockctl, here or in another process. A log that does not
// exist yet is followed from its start once it does: all of it is new, and its first
// line may be the force-release that created it. It only reads the file.
func watchAudit(ctx context.Context, path string, out chan<- signal) {
	var f *os.File
	var r *bufio.Reader
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var partial strings.Builder
	whence := io.SeekEnd
	for {
		if f == nil {
			g, err := os.Open(path)
			switch {
			case err == nil:
				if _, err := g.Seek(0, whence); err == nil {
					f, r = g, bufio.NewReader(g)
				} else {
					g.Close()
				}
			case errors.Is(err, fs.ErrNotExist):
				whence = io.SeekStart
			}
		}
		for f != nil {
			line, err := r.ReadString('\n')
			partial.WriteString(line)
			if err != nil {
				break // no whole line yet: the rest comes with the next read
			}
			var a auditLine
			if json.Unmarshal([]byte(partial.String()), &a) == nil && a.Phase == "intent" && strings.HasPrefix(a.Action, "force-release") {
				select {
				case out <- signal{kind: sigForce, at: a.Time, keys: []string{a.Resource}}:
				case <-ctx.Done():
					return
				}
			}
			partial.Reset()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(auditEvery):
		}
	}
}

// holder holds events for forceHold before they go out, and names force-released the
// end of a lifecycle an audited force-release intent came before.
type holder struct {
	emit    func(Event)
	pending []Event
	forced  map[string]time.Time // resource -> intent time, for ends still to come
}

func (h *holder) add(e Event) {
	if e.Ends() {
		if at, ok := h.forced[e.Resource]; ok && !e.At.Before(at) && e.At.Sub(at) <= forceWindow {
			delete(h.forced, e.Resource)
			e.Event = ForceReleased
		}
	}
	h.pending = append(h.pending, e)
}

// force records an intent to force-release resource at at: an end already held is
// renamed, else the next one within forceWindow is.
func (h *holder) force(resource string, at time.Time) {
	for i := range h.pending {
		if e := &h.pending[i]; e.Resource == resource && e.Ends() && !e.At.Before(at) && e.At.Sub(at) <= forceWindow {
			e.Event = ForceReleased
			return
		}
	}
	h.forced[resource] = at
}

// flush emits the events held since before now-forceHold, and forgets intents older
// than forceWindow.
func (h *holder) flush(now time.Time) {
	i := 0
	for i < len(h.pending) && now.Sub(h.pending[i].At) >= forceHold {
		h.emit(h.pending[i])
		i++
	}
	h.pending = h.pending[i:]
	for r, at := range h.forced {
		if now.Sub(at) > forceWindow {
			delete(h.forced, r)
		}
	}
}

// next is when flush has something to emit (zero: nothing held).
func (h *holder) next() time.Time {
	if len(h.pending) == 0 {
		return time.Time{}
	}
	return h.pending[0].At.Add(forceHold)
}
