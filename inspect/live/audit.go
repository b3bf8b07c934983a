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
// force-release through redlockctl, here or in another process. It follows the path,
// as `tail -F` does: a log that does not exist yet is read from its start once it
// does (all of it is new, and its first line may be the force-release that created
// it); a log replaced at the path (rotated: renamed away and created anew) is read to
// its end, then the new file from its start; a log truncated in place is read again
// from its start. It only reads the files.
func watchAudit(ctx context.Context, path string, out chan<- signal) {
	a := auditFollower{path: path, out: out, whence: io.SeekEnd}
	defer a.close()
	for a.poll(ctx) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(auditEvery):
		}
	}
}

// auditFollower is watchAudit's state: the file it reads, and how far.
type auditFollower struct {
	path    string
	out     chan<- signal
	whence  int // where a file opened at path is read from: its end (the first), its start (every later one)
	f       *os.File
	r       *bufio.Reader
	off     int64           // the bytes of f read so far
	partial strings.Builder // a line read without its newline yet
}

// poll reads what is new at the path; false when ctx ended.
func (a *auditFollower) poll(ctx context.Context) bool {
	if a.f == nil {
		a.open()
		if a.f == nil {
			return true
		}
	}
	if !a.read(ctx) {
		return false
	}
	st, err := a.f.Stat()
	if err == nil && st.Size() < a.off {
		// Truncated in place: what is there now was written since.
		if _, err := a.f.Seek(0, io.SeekStart); err != nil {
			a.close()
			return true
		}
		a.r.Reset(a.f)
		a.off = 0
		a.partial.Reset()
		return a.read(ctx)
	}
	now, perr := os.Stat(a.path)
	if errors.Is(perr, fs.ErrNotExist) {
		a.whence = io.SeekStart // renamed away, or removed: the next file at the path is new
		return true
	}
	if err == nil && perr == nil && !os.SameFile(st, now) {
		// Replaced: the old file's last lines (written before the rename, or by a
		// writer that still had it open) are read, then the new file from its start.
		if !a.read(ctx) {
			return false
		}
		a.close()
		a.whence = io.SeekStart
		a.open()
		if a.f != nil {
			return a.read(ctx)
		}
	}
	return true
}

// open opens the file at path and seeks to a.whence; a.f stays nil when there is none.
func (a *auditFollower) open() {
	g, err := os.Open(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		a.whence = io.SeekStart
		return
	}
	if err != nil {
		return
	}
	off, err := g.Seek(0, a.whence)
	if err != nil {
		g.Close()
		return
	}
	a.f, a.r, a.off = g, bufio.NewReader(g), off
	a.partial.Reset()
	a.whence = io.SeekStart
}

// read sends the force-release intents of the whole lines written since the last
// read; false when ctx ended.
func (a *auditFollower) read(ctx context.Context) bool {
	for {
		line, err := a.r.ReadString('\n')
		a.off += int64(len(line))
		a.partial.WriteString(line)
		if err != nil {
			return true // no whole line yet: the rest comes with the next read
		}
		var l auditLine
		if json.Unmarshal([]byte(a.partial.String()), &l) == nil && l.Phase == "intent" && strings.HasPrefix(l.Action, "force-release") {
			select {
			case a.out <- signal{kind: sigForce, at: l.Time, keys: []string{l.Resource}}:
			case <-ctx.Done():
				return false
			}
		}
		a.partial.Reset()
	}
}

// close closes the file read, if any.
func (a *auditFollower) close() {
	if a.f != nil {
		a.f.Close()
		a.f, a.r = nil, nil
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
