// Package ui is the redlockctl console: a bubbletea model with a header, a masters
// panel, the resource table, a detail view and the action dialogs. It does no I/O
// itself: polls and actions are functions given in Options, called only inside
// tea.Cmd closures with a deadline, and their results come back as messages.
package ui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/admin"
	"github.com/redlockctl/redlockctl/inspect/config"
	"github.com/redlockctl/redlockctl/redlock"
)

// Actions is the write side of the console; *admin.Actions implements it (and is the
// read-only gate behind the console's own: it returns admin.ErrReadOnly).
type Actions interface {
	Acquire(ctx context.Context, resource string, ttl time.Duration, owner string) (*redlock.Lock, admin.ActionResult, error)
	Extend(ctx context.Context, resource, value string, ttl time.Duration) (admin.ActionResult, error)
	// Renew is a keep-alive extension of a lock Acquire returned: not audited, and an
	// error once the lock cannot be proven held (local deadline passed, or fewer than a
	// quorum extended).
	Renew(ctx context.Context, l *redlock.Lock, ttl time.Duration) (admin.ActionResult, error)
	Release(ctx context.Context, resource, value string) (admin.ActionResult, error)
	ForceRelease(ctx context.Context, resource, value string) (admin.ActionResult, error)
	ForceReleaseAny(ctx context.Context, resource string) (admin.ActionResult, error)
}

// Options configures a console Model.
type Options struct {
	Config *config.Config
	// Poll reads every master once; it is called inside a command, never two at once,
	// with a context that carries the poll deadline.
	Poll func(ctx context.Context) *inspect.Snapshot
	// Actions performs operator actions; it is never called when Config.ReadOnly.
	Actions Actions
	// Now is the clock for poll ages (default time.Now).
	Now func() time.Time
	// PollTimeout bounds one poll (default max(4×inspect timeout, 3s)); ActionTimeout
	// bounds one action (default 10s).
	PollTimeout   time.Duration
	ActionTimeout time.Duration
}

type mode int

const (
	modeTable mode = iota
	modeDetail
)

// heldLock is a lock this console acquired. Kept-alive locks are renewed until
// released or lost; the others are forgotten once their validity has passed.
type heldLock struct {
	lock      *redlock.Lock // used only inside keep-alive commands, one at a time
	value     string
	ttl       time.Duration
	token     int64
	keepAlive bool
	expires   time.Time // not kept alive: the end of the validity the acquire reported
}

// Model is the console's root model. Use New; all I/O goes through Options.
type Model struct {
	cfg           *config.Config
	poll          func(ctx context.Context) *inspect.Snapshot
	actions       Actions
	clock         func() time.Time
	pollTimeout   time.Duration
	actionTimeout time.Duration
	readOnly      bool
	after         func(time.Duration, func(time.Time) tea.Msg) tea.Cmd // tea.Tick; tests replace it

	keys   KeyMap
	dkeys  DialogKeyMap
	styles Styles
	help   help.Model

	width, height int

	snap           *inspect.Snapshot
	seq            int
	now            time.Time
	polling        bool
	pendingRefresh bool
	paused         bool

	table        *table
	mode         mode
	detailName   string
	detailScroll int
	showHelp     bool
	filtering    bool
	filterInput  input
	history      map[string][]inspect.Event

	held    map[string]*heldLock
	dialog  dialog
	status  string
	statErr bool
	exit    []string // lines to print after the program ends
}

// historyPerResource bounds the events kept per resource.
const historyPerResource = 20

// New returns a console model; it starts polling in Init.
func New(o Options) *Model {
	cfg := o.Config
	if cfg == nil {
		cfg = &config.Config{}
	}
	m := &Model{
		cfg:           cfg,
		poll:          o.Poll,
		actions:       o.Actions,
		clock:         o.Now,
		pollTimeout:   o.PollTimeout,
		actionTimeout: o.ActionTimeout,
		readOnly:      cfg.ReadOnly,
		keys:          DefaultKeyMap(cfg.ReadOnly),
		dkeys:         DefaultDialogKeyMap(),
		styles:        DefaultStyles(cfg.LabelColor),
		help:          help.New(),
		width:         80,
		height:        24,
		table:         newTable(),
		history:       map[string][]inspect.Event{},
		held:          map[string]*heldLock{},
	}
	m.after = tea.Tick
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.pollTimeout <= 0 {
		m.pollTimeout = max(4*cfg.Inspect.Timeout, 3*time.Second)
	}
	if m.actionTimeout <= 0 {
		m.actionTimeout = 10 * time.Second
	}
	m.help.Styles = m.styles.Help
	m.filterInput = newInput("/", "filter resources, owners, values, states")
	m.now = m.clock()
	m.resize()
	return m
}

// Messages.
type (
	tickMsg     time.Time
	snapshotMsg struct{ snap *inspect.Snapshot }
	// actionMsg is the result of one Actions call.
	actionMsg struct {
		req       actionReq
		result    admin.ActionResult
		err       error
		lock      *redlock.Lock
		lockValue string
		token     int64
		validity  time.Duration
	}
	keepAliveMsg    struct{ resource, value string }
	quitReleasedMsg struct{ lines []string }
)

// actionReq is one action to perform, captured by value in its command.
type actionReq struct {
	kind      string // "acquire", "extend", "release", "force-release", "force-release-any", "keep-alive"
	resource  string
	value     string
	ttl       time.Duration
	keepAlive bool
	lock      *redlock.Lock // keep-alive: the lock to renew
}

// Init starts the first poll and the poll ticker.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.startPoll(), m.tick())
}

func (m *Model) tick() tea.Cmd {
	return m.after(m.pollInterval(), func(t time.Time) tea.Msg { return tickMsg(t) })
}

// startPoll returns a command running one poll, or nil when one is in flight.
func (m *Model) startPoll() tea.Cmd {
	if m.polling || m.poll == nil {
		return nil
	}
	m.polling = true
	poll, d := m.poll, m.pollTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return snapshotMsg{snap: poll(ctx)}
	}
}

// actionCmd returns the command performing req through Actions. It is the console's
// only path to a write; in read-only mode it sends nothing and reports ErrReadOnly.
func (m *Model) actionCmd(req actionReq) tea.Cmd {
	if m.readOnly || m.actions == nil {
		return func() tea.Msg { return actionMsg{req: req, err: admin.ErrReadOnly} }
	}
	acts, d := m.actions, m.actionTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		out := actionMsg{req: req}
		switch req.kind {
		case "acquire":
			var l *redlock.Lock
			l, out.result, out.err = acts.Acquire(ctx, req.resource, req.ttl, "")
			out.lock = l
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
		case "force-release":
			out.result, out.err = acts.ForceRelease(ctx, req.resource, req.value)
		case "force-release-any":
			out.result, out.err = acts.ForceReleaseAny(ctx, req.resource)
		default:
			out.err = fmt.Errorf("unknown action %q", req.kind)
		}
		return out
	}
}

// Update turns one message into state and commands; it never blocks.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.resize()
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		m.forgetExpired()
		var poll tea.Cmd
		if !m.paused {
			poll = m.startPoll()
		}
		return m, tea.Batch(poll, m.tick())
	case snapshotMsg:
		return m, m.onSnapshot(msg.snap)
	case actionMsg:
		return m, m.onAction(msg)
	case keepAliveMsg:
		h := m.held[msg.resource]
		if h == nil || h.value != msg.value || !h.keepAlive {
			return m, nil // released meanwhile
		}
		return m, m.actionCmd(actionReq{kind: "keep-alive", resource: msg.resource, value: h.value, ttl: h.ttl, lock: h.lock})
	case quitReleasedMsg:
		m.exit = append(m.exit, msg.lines...)
		return m, tea.Quit
	case tea.PasteMsg:
		if m.dialog != nil {
			return m, m.dialog.update(m, msg)
		}
		if m.filtering {
			m.filterInput.Update(msg)
			m.table.setFilter(m.filterInput.Value())
			return m, nil
		}
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

func (m *Model) onSnapshot(s *inspect.Snapshot) tea.Cmd {
	m.polling = false
	m.now = m.clock()
	if s == nil {
		m.setStatus("poll returned nothing", true)
		return nil
	}
	m.seq++
	m.snap = s
	m.forgetExpired()
	m.table.mine = m.mineMap()
	m.table.setSnapshot(s, m.seq)
	for _, e := range s.Events {
		h := append(m.history[e.Resource], e)
		if len(h) > historyPerResource {
			h = h[len(h)-historyPerResource:]
		}
		m.history[e.Resource] = h
	}
	if len(m.history) > 4*len(s.Resources)+1000 {
		m.pruneHistory()
	}
	m.resize() // the masters panel may have grown or shrunk
	if m.pendingRefresh {
		m.pendingRefresh = false
		return m.startPoll()
	}
	return nil
}

// pruneHistory drops the history of resources absent from the current snapshot.
func (m *Model) pruneHistory() {
	for name := range m.history {
		if _, ok := m.table.rowByName(name); !ok {
			delete(m.history, name)
		}
	}
}

// forgetExpired drops the locks acquired without keep-alive whose validity has passed.
func (m *Model) forgetExpired() {
	now := m.clock()
	for r, h := range m.held {
		if !h.keepAlive && !now.Before(h.expires) {
			delete(m.held, r)
		}
	}
	m.table.mine = m.mineMap()
}

func (m *Model) mineMap() map[string]string {
	out := make(map[string]string, len(m.held))
	for r, h := range m.held {
		out[r] = h.value
	}
	return out
}

// refresh polls now, or right after the poll in flight.
func (m *Model) refresh() tea.Cmd {
	if m.polling {
		m.pendingRefresh = true
		return nil
	}
	return m.startPoll()
}

func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.statErr = s, isErr
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

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		if _, asking := m.dialog.(*quitDialog); !asking {
			m.dialog = nil // ctrl+c quits from anywhere (asking first when holding locks)
			m.filtering = false
			return m.quit()
		}
	}
	if m.dialog != nil {
		return m.dialog.update(m, msg)
	}
	if m.filtering {
		switch msg.String() {
		case "enter":
			m.filtering = false
			m.filterInput.Blur()
			return nil
		case "esc":
			m.filtering = false
			m.filterInput.SetValue("")
			m.filterInput.Blur()
			m.table.setFilter("")
			return nil
		}
		m.filterInput.Update(msg)
		m.table.setFilter(m.filterInput.Value())
		return nil
	}
	if m.showHelp {
		m.showHelp = false
		if key.Matches(msg, m.keys.Quit) {
			return m.quit()
		}
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp = true
		return nil
	case key.Matches(msg, k.Pause):
		m.paused = !m.paused
		if m.paused {
			m.setStatus("polling paused", false)
		} else {
			m.setStatus("polling resumed", false)
			return m.refresh()
		}
		return nil
	case key.Matches(msg, k.Refresh):
		return m.refresh()
	case key.Matches(msg, k.Acquire):
		name := ""
		if r := m.focused(); r != nil {
			name = r.Resource
		}
		m.dialog = newAcquireDialog(name, m.defaultTTL())
		return nil
	case key.Matches(msg, k.Extend):
		r := m.focused()
		if r == nil || r.Value == "" || r.State == inspect.StateForeign {
			m.setStatus("extend: no lock value on this row", true)
			return nil
		}
		if !m.actionable(r, "extend") {
			return nil
		}
		m.dialog = newExtendDialog(*r, m.defaultTTL())
		return nil
	case key.Matches(msg, k.Release):
		r := m.focused()
		if r == nil || m.held[r.Resource] == nil {
			m.setStatus("x releases a lock this console holds; D force-releases any lock", true)
			return nil
		}
		req := actionReq{kind: "release", resource: r.Resource, value: m.held[r.Resource].value}
		m.dialog = &pendingDialog{req: req}
		return m.actionCmd(req)
	case key.Matches(msg, k.ForceRelease):
		r := m.focused()
		if r == nil || r.State == inspect.StateFree {
			m.setStatus("force-release: no lock on this row", true)
			return nil
		}
		if !m.actionable(r, "force-release") {
			return nil
		}
		m.dialog = newForceDialog(m.snap, *r)
		return nil
	}
	if m.mode == modeDetail {
		switch {
		case key.Matches(msg, k.Back):
			m.mode = modeTable
		case key.Matches(msg, k.Up):
			m.detailScroll = max(0, m.detailScroll-1)
		case key.Matches(msg, k.Down):
			m.detailScroll++
		case key.Matches(msg, k.PageUp):
			m.detailScroll = max(0, m.detailScroll-m.bodyHeight())
		case key.Matches(msg, k.PageDown):
			m.detailScroll += m.bodyHeight()
		case key.Matches(msg, k.Top):
			m.detailScroll = 0
		case key.Matches(msg, k.Bottom):
			m.detailScroll = len(m.detailLines(m.width)) // clamped to the last page below
		}
		m.clampDetailScroll()
		return nil
	}
	t := m.table
	switch {
	case key.Matches(msg, k.Up):
		t.moveTo(t.cursor - 1)
	case key.Matches(msg, k.Down):
		t.moveTo(t.cursor + 1)
	case key.Matches(msg, k.PageUp):
		t.moveTo(t.cursor - t.height)
	case key.Matches(msg, k.PageDown):
		t.moveTo(t.cursor + t.height)
	case key.Matches(msg, k.Top):
		t.moveTo(0)
	case key.Matches(msg, k.Bottom):
		t.moveTo(len(t.view) - 1)
	case key.Matches(msg, k.Detail):
		if r := t.current(); r != nil {
			m.mode = modeDetail
			m.detailName = r.Resource
			m.detailScroll = 0
		}
	case key.Matches(msg, k.Back):
		if t.filter != "" || t.anomaliesOnly {
			m.filterInput.SetValue("")
			t.anomaliesOnly = false
			t.setFilter("")
		}
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.filterInput.Focus()
		return nil
	case key.Matches(msg, k.Anomalies):
		t.toggleAnomalies()
	case key.Matches(msg, k.SortNext):
		t.sortBy(t.sortCol + 1)
	case key.Matches(msg, k.SortPrev):
		t.sortBy(t.sortCol - 1)
	case key.Matches(msg, k.Reverse):
		t.reverse()
	}
	return nil
}

// focused returns the resource the actions apply to: the detail's resource, or the
// row under the cursor.
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

func (m *Model) focused() *inspect.Resource {
	if m.mode == modeDetail {
		if idx, ok := m.table.rowByName(m.detailName); ok {
			return m.table.rows[idx].res
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
		m.dialog = &quitDialog{}
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

// resize recomputes the table height for the terminal size.
func (m *Model) resize() {
	m.help.SetWidth(m.width)
	m.filterInput.width = max(10, m.width-20)
	_, tableH := m.bodyLayout()
	m.table.setHeight(tableH - 1)
}

// bodyLayout returns the masters panel lines and the table height (title included).
func (m *Model) bodyLayout() ([]string, int) {
	fixed := 3 // header, status, help
	panel := m.mastersPanel(m.width)
	if m.height-fixed-len(panel) < 6 {
		panel = []string{m.summaryLine()}
		if m.snap == nil {
			panel = nil
		}
	}
	return panel, max(2, m.height-fixed-len(panel))
}

// bodyHeight is the height below the header and above the status line.
func (m *Model) bodyHeight() int { return max(1, m.height-3) }

// View renders the console at its size: exactly height lines, none wider than width.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeNone
	v.WindowTitle = "redlockctl: " + clean(m.cfg.Name)
	return v
}

// render returns the console's screen as a string.
func (m *Model) render() string {
	lines := make([]string, 0, m.height)
	lines = append(lines, m.header())
	var helpLine string
	switch {
	case m.dialog != nil:
		body := m.dialog.view(m, m.width)
		lines = append(lines, placeCenter(body, m.width, m.bodyHeight())...)
		helpLine = m.help.ShortHelpView(m.dialog.keys(m))
	case m.showHelp:
		lines = append(lines, m.fullHelp(m.bodyHeight())...)
		helpLine = m.styles.Dim.Render("any key: close help")
	case m.mode == modeDetail:
		lines = append(lines, m.detail(m.width, m.bodyHeight())...)
		helpLine = m.help.ShortHelpView(detailKeys(m.keys).ShortHelp())
	default:
		panel, tableH := m.bodyLayout()
		lines = append(lines, panel...)
		lines = append(lines, m.table.render(m.styles, m.width, tableH)...)
		helpLine = m.help.ShortHelpView(m.keys.ShortHelp())
	}
	lines = append(lines, m.statusLine(), helpLine)
	if len(lines) > m.height {
		// Keep the header, the status and help lines; cut the body.
		lines = append(lines[:m.height-2], lines[len(lines)-2:]...)
	}
	if n := m.height - len(lines); n > 0 {
		tail := []string{lines[len(lines)-2], lines[len(lines)-1]}
		lines = append(append(lines[:len(lines)-2], make([]string, n)...), tail...)
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > m.width {
			lines[i] = ansi.Truncate(l, m.width, "…")
		}
	}
	return strings.Join(lines, "\n")
}

// statusLine shows the filter, sort, row position and the last message.
func (m *Model) statusLine() string {
	t := m.table
	if m.filtering {
		return m.filterInput.View() + m.styles.Dim.Render(fmt.Sprintf("  %d/%d of %d", min(t.cursor+1, len(t.view)), len(t.view), len(t.rows)))
	}
	var parts []string
	if t.snap != nil {
		col := colNames[min(t.sortCol, colMasters-1)]
		if t.sortCol >= colMasters && t.sortCol-colMasters < len(t.snap.Masters) {
			col = "PTTL " + clean(t.snap.Masters[t.sortCol-colMasters].Name)
		}
		dir := "↑"
		if t.desc {
			dir = "↓"
		}
		pos := 0
		if len(t.view) > 0 {
			pos = t.cursor + 1
		}
		parts = append(parts, fmt.Sprintf("%d/%d", pos, len(t.view)))
		if len(t.view) != len(t.rows) {
			parts[0] += fmt.Sprintf(" of %d", len(t.rows))
		}
		parts = append(parts, "sort "+col+dir)
	}
	if t.filter != "" {
		parts = append(parts, "filter "+quote(m.filterInput.Value()))
	}
	if t.anomaliesOnly {
		parts = append(parts, "anomalies only")
	}
	if n := len(m.held); n > 0 {
		parts = append(parts, fmt.Sprintf("holding %d", n))
	}
	line := m.styles.Dim.Render(strings.Join(parts, " · "))
	if m.status != "" {
		st := m.styles.OK
		if m.statErr {
			st = m.styles.Crit
		}
		line += "  " + st.Render(m.status)
	}
	return line
}

// fullHelp renders the `?` help: every key, then a legend of marks and cells.
func (m *Model) fullHelp(height int) []string {
	h := m.help
	lines := []string{m.styles.Header.Render("Keys"), ""}
	lines = append(lines, strings.Split(h.FullHelpView(m.keys.FullHelp()), "\n")...)
	lines = append(lines, "",
		m.styles.Header.Render("Legend"),
		"  marks   > cursor  + changed lately  * held by this console  ! anomaly  ? uncertain",
		"  cells   PTTL: holds the row's value   ~PTTL: holds another value   -: absent",
		"          down/err: master unreachable   hash, list...: not a string key",
		"  states  held  partial  split  no-ttl  foreign  free",
	)
	if m.readOnly {
		lines = append(lines, "", m.styles.Flag.Render("READ-ONLY: actions are disabled"))
	}
	if len(lines) > height {
		lines = lines[:height]
	}
	return lines
}

// placeCenter centres a block of lines in width×height. A block taller than height
// keeps its first line and its bottom (where a dialog has its input and keys), so the
// field being typed into never falls off the screen.
func placeCenter(block string, width, height int) []string {
	lines := strings.Split(block, "\n")
	if len(lines) > height && height >= 3 {
		lines = append([]string{lines[0], "  ⋮"}, lines[len(lines)-(height-2):]...)
	}
	bw := 0
	for _, l := range lines {
		bw = max(bw, ansi.StringWidth(l))
	}
	pad := strings.Repeat(" ", max(0, (width-bw)/2))
	top := max(0, (height-len(lines))/3)
	out := make([]string, 0, height)
	for i := 0; i < top; i++ {
		out = append(out, "")
	}
	for _, l := range lines {
		out = append(out, pad+l)
	}
	if len(out) > height {
		out = out[:height]
	}
	return out
}
