package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/redlock"
)

// actionCmd returns the command performing req through Actions. It is the console's
// only path to a write; in read-only mode it sends nothing and reports ErrReadOnly.
func (m *Model) actionCmd(req actionReq) tea.Cmd {
	if m.readOnly || m.actions == nil {
		return func() tea.Msg { return actionMsg{req: req, err: admin.ErrReadOnly} }
	}
	acts, d, cfg := m.actions, m.actionTimeout, m.cfg
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		out := actionMsg{req: req}
		switch req.kind {
		case "acquire":
			var l *redlock.Lock
			l, out.result, out.err = acts.Acquire(ctx, req.resource, req.ttl, "")
			out.lock = l
			if advice := admin.RestartAdvice(cfg, out.err); advice != "" {
				out.err = errors.New(advice)
			}
			if out.err == nil {
				out.lockValue, out.token, out.validity = out.result.Value, out.result.Token, out.result.Validity
				if l != nil && l.Value() != "" {
					out.lockValue, out.token, out.validity = l.Value(), l.Token(), l.Validity()
				}
				if out.lockValue == "" {
					out.err = fmt.Errorf("acquire %q: no lock value returned", req.resource)
				}
			}
		case "extend":
			out.result, out.err = acts.Extend(ctx, req.resource, req.value, req.ttl)
		case "keep-alive":
			out.result, out.err = acts.Renew(ctx, req.lock, req.ttl)
		case "release":
			out.result, out.err = acts.Release(ctx, req.resource, req.value)
		case "force-release", "force-release-any":
			out.result, out.err = acts.ForceRelease(ctx, req.plan)
		default:
			out.err = fmt.Errorf("unknown action %q", req.kind)
		}
		return out
	}
}

func (m *Model) onAction(msg actionMsg) tea.Cmd {
	req := msg.req
	summary := resultSummary(req, msg)
	if req.kind == "keep-alive" {
		h := m.held[req.resource]
		if h == nil || h.value != req.value {
			return nil
		}
		if msg.err != nil {
			delete(m.held, req.resource)
			m.table.mine = m.mineMap()
			m.setStatus("LOST "+clean(req.resource)+": keep-alive extend failed: "+clean(msg.err.Error()), true)
			return m.refresh()
		}
		return m.keepAliveTick(req.resource, h)
	}
	var cmds []tea.Cmd
	switch req.kind {
	case "acquire":
		if msg.err == nil {
			h := &heldLock{lock: msg.lock, value: msg.lockValue, ttl: req.ttl, token: msg.token,
				keepAlive: req.keepAlive, expires: m.clock().Add(msg.validity)}
			m.held[req.resource] = h
			if h.keepAlive {
				cmds = append(cmds, m.keepAliveTick(req.resource, h))
			}
		}
	case "release", "force-release", "force-release-any":
		if h := m.held[req.resource]; h != nil && msg.result.Done > 0 &&
			(req.kind == "force-release-any" || h.value == req.value) {
			delete(m.held, req.resource)
		}
	}
	m.table.mine = m.mineMap()
	m.setStatus(summary, msg.err != nil)
	if d, ok := m.dialog.(*pendingDialog); ok && d.req.kind == req.kind && d.req.resource == req.resource {
		m.dialog = &resultDialog{msg: msg}
	}
	cmds = append(cmds, m.refresh())
	return tea.Batch(cmds...)
}

func (m *Model) keepAliveTick(resource string, h *heldLock) tea.Cmd {
	every := max(h.ttl/3, 10*time.Millisecond)
	value := h.value
	return m.after(every, func(time.Time) tea.Msg { return keepAliveMsg{resource: resource, value: value} })
}

func resultSummary(req actionReq, msg actionMsg) string {
	r := msg.result
	what := req.kind + " " + clean(req.resource)
	if msg.err != nil {
		return fmt.Sprintf("%s: failed: %s", what, clean(msg.err.Error()))
	}
	var s string
	switch req.kind {
	case "release", "force-release", "force-release-any":
		// A master where the value (or key) was already gone is settled: done, as the
		// exit code counts it.
		if r.Action == "" {
			r.Action = req.kind
		}
		settled := r.Settled()
		s = fmt.Sprintf("%s: done on %d/%d masters", what, settled, len(r.Nodes))
		if gone := settled - r.Done; gone > 0 {
			s += fmt.Sprintf(" (%d deleted, %d already gone; quorum %d)", r.Done, gone, r.Quorum)
		} else {
			s += fmt.Sprintf(" (quorum %d)", r.Quorum)
		}
	default:
		s = fmt.Sprintf("%s: done on %d/%d masters (quorum %d)", what, r.Done, len(r.Nodes), r.Quorum)
	}
	if req.kind == "acquire" {
		s += fmt.Sprintf(", validity %s", fmtDur(msg.validity))
		if req.keepAlive {
			s += ", kept alive"
		}
	}
	return s
}

// actionable reports whether actions on r's resource name reach r's key. Actions name a
// resource and the library adds lock.key_prefix; a key scanned outside the prefix (a
// pattern wider than the prefix) would be shown under a name whose key is another one,
// and acting on it would hit that other key.
func (m *Model) actionable(r *inspect.Resource, action string) bool {
	if m.cfg.Key(r.Resource) == r.Key {
		return true
	}
	m.setStatus(fmt.Sprintf("%s: key %s is outside lock.key_prefix %s: redlockctl does not act on it", action, clean(r.Key), clean(m.cfg.Lock.KeyPrefix)), true)
	return false
}

// focused returns the resource the actions apply to: the detail's resource, or the
// row under the cursor.
func (m *Model) focused() *inspect.Resource {
	if m.detail.shown {
		if idx, ok := m.table.rowByName(m.detail.name); ok {
			return m.table.resource(idx)
		}
		return nil
	}
	return m.table.current()
}

func (m *Model) defaultTTL() time.Duration {
	if d := m.cfg.Lock.DefaultTTL; d > 0 {
		return d
	}
	return 30 * time.Second
}

// quit quits, or asks first when the console holds locks.
func (m *Model) quit() tea.Cmd {
	if len(m.held) > 0 {
		m.dialog = &quitDialog{held: m.held}
		return nil
	}
	return tea.Quit
}

// releaseAllAndQuit releases every held lock (owner-checked) within one deadline,
// then quits.
func (m *Model) releaseAllAndQuit() tea.Cmd {
	if m.readOnly || m.actions == nil {
		return tea.Quit
	}
	type one struct{ resource, value string }
	var locks []one
	for r, h := range m.held {
		locks = append(locks, one{r, h.value})
	}
	sort.Slice(locks, func(i, j int) bool { return locks[i].resource < locks[j].resource })
	m.held = map[string]*heldLock{}
	acts, d := m.actions, m.actionTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		lines := make([]string, len(locks))
		var wg sync.WaitGroup
		for i, l := range locks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if rec := recover(); rec != nil { // a bug costs this release, named as such
						lines[i] = fmt.Sprintf("release %s: internal error, please report it: %v", l.resource, rec)
					}
				}()
				res, err := acts.Release(ctx, l.resource, l.value)
				lines[i] = resultSummary(actionReq{kind: "release", resource: l.resource}, actionMsg{result: res, err: err})
			}()
		}
		wg.Wait()
		return quitReleasedMsg{lines: lines}
	}
}

// keepAndQuit quits leaving the held locks to expire.
func (m *Model) keepAndQuit() tea.Cmd {
	var names []string
	for r, h := range m.held {
		names = append(names, fmt.Sprintf("left %s (value %s) to expire within %s", clean(r), quote(h.value), fmtDur(h.expiresWithin(m.clock()))))
	}
	sort.Strings(names)
	m.exit = append(m.exit, names...)
	m.held = map[string]*heldLock{}
	return tea.Quit
}

// expiresWithin bounds how long the lock stays on the masters once no longer renewed.
func (h *heldLock) expiresWithin(now time.Time) time.Duration {
	if h.keepAlive {
		return h.ttl
	}
	return max(0, h.expires.Sub(now))
}

// ExitReport returns what the console did on quitting (locks released or left to
// expire), one line each, for printing after the program ends.
func (m *Model) ExitReport() []string { return m.exit }

// Held returns the resources this console acquired and still holds (kept alive or
// within their validity), sorted.
func (m *Model) Held() []string {
	out := make([]string, 0, len(m.held))
	for r := range m.held {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}
