// Package ui is the redlockctl console: a bubbletea model with a header, a masters
// panel, the resource table, a detail view and the action dialogs. It does no I/O
// itself: polls and actions are functions given in Options, called only inside
// tea.Cmd closures with a deadline, and their results come back as messages. It must
// never block in Update or View, and never send a write except through Actions.
//
// Panes are components (common.go): the masters panel (masters.go), the live activity
// pane (activity.go) and the detail view (detail.go) each keep their own state, keys
// (a KeyMap with ShortHelp and FullHelp) and view, sized by the root Model, which
// routes each key to the pane that has the focus. A dialog (acquire, extend,
// force-release, pending, result, quit) is a modal pane that asks the root Model by
// message to close it, run an action or quit. Panes read the shared common struct
// (styles, keys, clock, read-only flag, the last poll, the locks held, the live
// record) and never change the Model. A new pane is one file. The force-release dialog
// shows and carries out admin.ForcePlan, the plan the CLI prints for the same row.
//
// Text fields are bubbles/textinput and help is bubbles/help. The resource table is the
// package's own (table*.go) because bubbles/table cannot meet the 100k-row target: its
// SetRows takes every cell of every row as a pre-rendered string, so each snapshot, sort
// or filter keystroke would rebuild 100k x (7+N) strings, and it styles all cells alike,
// while each per-master PTTL cell here is coloured by its agreement with the holding
// value. This table keeps one precomputed row per resource, sorts and filters index
// slices, and renders only the visible rows.
package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/crashtest"
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
	// ForceRelease is every force-release: the plan the dialog showed, carried out as
	// the CLI carries out the same plan.
	ForceRelease(ctx context.Context, plan admin.ForcePlan) (admin.ActionResult, error)
}

// Options configures a console Model.
type Options struct {
	Config *config.Config
	// Poll reads every master once; it is called inside a command, never two at once,
	// with a context that carries the poll deadline. The console keeps the stream (its
	// rows are built when drawn or opened) and compact rows of its own:
	// poll.Poller.PollStream, or poll.StreamOf a snapshot built whole.
	Poll func(ctx context.Context) *poll.Stream
	// Actions performs operator actions; it is never called when Config.ReadOnly.
	Actions Actions
	// Now is the clock for poll ages (default time.Now).
	Now func() time.Time
	// PollTimeout bounds one poll (default 2 minutes: liveness is judged per round trip); ActionTimeout
	// bounds one action (default 10s).
	PollTimeout   time.Duration
	ActionTimeout time.Duration
	// Live, when set, carries the live feed's events (inspect/live): the LIVE column,
	// the activity pane and the detail view's lifecycles come from it.
	Live <-chan live.Event
	// Notice, when set, is on the status line from the start until a message
	// replaces it (the demo says there what its masters cannot show).
	Notice string
	// History, when set, reads a resource's recent lifecycles from the history
	// store: the detail view lists the last holders it recorded.
	History HistoryReader
	// Woken, when set, receives when the live feed has reported a change since it
	// last received (poll.Poller.Woken, a feed-first poller's): the console polls
	// then, besides every poll_interval (see wakePoll).
	Woken <-chan struct{}
	// Delta, when set, is how a poll for a wake reads the changes alone: a
	// poll.Poller.PollDeltaOf the stream the table draws from (called as Poll is).
	// The table is patched with the rows it judged (tablepatch.go). Where it returns
	// nil, or a Delta naming a master that did not answer (then said on the status
	// line), the poll is a whole one (Poll).
	Delta func(ctx context.Context, st *poll.Stream) *poll.Delta
	// Fed, when set, reports whether the last poll kept every master's rows from its
	// live feed (a feed-first poller's Fed, every entry true); it is called inside
	// the poll's command. Such a poll reads nothing from the masters and only judges
	// the rows again: the interval's are paced to a share of the console's time (see
	// poll.WholeShare), so that a change is read by a Delta at once rather than after the
	// whole poll in flight.
	Fed func() bool
}

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

// Model is the console's root model. Use New; all I/O goes through Options. It owns
// the shared data (common), the polls and actions, the filter field, the status line
// and the dialog; the panes (masters panel, activity pane, detail view) own their
// state, and it routes each key to the one that has the focus.
type Model struct {
	common      // shared with the panes, read-only to them
	cfg         *config.Config
	poll        func(ctx context.Context) *poll.Stream
	delta       func(ctx context.Context, st *poll.Stream) *poll.Delta
	fed         func() bool // Options.Fed
	actions     Actions
	storedRead  HistoryReader // the history store (nil: none)
	pollTimeout time.Duration
	after       func(time.Duration, func(time.Time) tea.Msg) tea.Cmd // tea.Tick; tests replace it

	help help.Model

	width, height int

	seq            int
	polling        bool
	pollingDelta   bool // the poll in flight is a Delta (startPollFor)
	pendingRefresh bool
	paused         bool
	wake           wakeState

	masters  *mastersPane
	activity *activityPane
	detail   *detailPane // has the focus while shown; the table has it otherwise

	showHelp    bool
	filtering   bool
	liveCh      <-chan live.Event // the live feed
	filterInput input
	// While paused, the live feed's events wait in liveHeld (at most maxLiveHeld; the
	// oldest go first, counted in liveDropped) and the LIVE figures are as of pausedAt:
	// paused means frozen.
	liveHeld    []live.Event
	liveDropped int
	pausedAt    time.Time

	dialog  dialog
	status  string
	statErr bool
	exit    []string // lines to print after the program ends
}

// New returns a console model; it starts polling in Init.
func New(o Options) *Model {
	cfg := o.Config
	if cfg == nil {
		cfg = &config.Config{}
	}
	m := &Model{
		common: common{
			clock:         o.Now,
			actionTimeout: o.ActionTimeout,
			readOnly:      cfg.ReadOnly,
			keys:          DefaultKeyMap(cfg.ReadOnly),
			dkeys:         DefaultDialogKeyMap(),
			styles:        DefaultStyles(cfg.LabelColor),
			table:         newTable(),
			held:          map[string]*heldLock{},
		},
		cfg:         cfg,
		poll:        o.Poll,
		delta:       o.Delta,
		actions:     o.Actions,
		storedRead:  o.History,
		pollTimeout: o.PollTimeout,
		help:        help.New(),
		width:       80,
		height:      24,
	}
	m.status = o.Notice
	m.after = tea.Tick
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.pollTimeout <= 0 {
		// A backstop only: the poller gives each master's round trips inspect.timeout,
		// and a master that keeps answering is read whole, however many keys it holds.
		m.pollTimeout = max(4*cfg.Inspect.Timeout, 2*time.Minute)
	}
	if m.actionTimeout <= 0 {
		m.actionTimeout = 10 * time.Second
	}
	m.table.tolerance = verdict.EventTolerance(cfg)
	m.help.Styles = m.styles.Help
	m.filterInput = newInput("/", "name, owner or value; billing:* (glob); owner: lib: state: value:")
	if o.Live != nil {
		m.live, m.liveCh = newLiveBoard(), o.Live
	}
	m.wake.ch, m.fed = o.Woken, o.Fed
	m.masters = newMastersPane(&m.common, cfg.Lock.NodeTimeout)
	m.activity = newActivityPane(&m.common)
	m.detail = newDetailPane(&m.common)
	m.detail.storedOn = o.History != nil
	m.now = m.clock()
	m.resize()
	return m
}

// Messages.
type (
	tickMsg     time.Time
	snapshotMsg struct {
		st    *poll.Stream
		built *table        // its rows, built in the poll's command
		took  time.Duration // the poll and the build (and a Delta before them)
		fed   bool          // it kept every master's rows from its feed (Options.Fed)
		// unanswered names the masters that did not answer the Delta that this poll
		// followed (a wake's).
		unanswered []string
	}
	// deltaMsg is a wake's poll that was a Delta (Options.Delta).
	deltaMsg struct {
		d       *poll.Delta
		patched *table        // the table patched with it in the poll's command
		took    time.Duration // the Delta and the patch
	}
	// noDeltaMsg says that a wake's poll could have no Delta (nothing was read): the
	// wake's is a whole poll.
	noDeltaMsg struct{}
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
	lock      *redlock.Lock   // keep-alive: the lock to renew
	plan      admin.ForcePlan // force-release: what it deletes on each master
}

// Init starts the first poll and the poll ticker.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.startPoll(), m.tick()}
	if m.liveCh != nil {
		cmds = append(cmds, waitLive(m.liveCh))
	}
	if m.wake.ch != nil {
		cmds = append(cmds, waitWoken(m.wake.ch))
	}
	return tea.Batch(cmds...)
}

func (m *Model) tick() tea.Cmd {
	return m.after(m.pollInterval(), func(t time.Time) tea.Msg { return tickMsg(t) })
}

// startPoll returns a command running one whole poll, or nil when one is in flight.
func (m *Model) startPoll() tea.Cmd { return m.startPollFor(false) }

// startPollFor returns a command running one poll, or nil when one is in flight: a
// Delta of the table's poll for a wake (delta; see wakePoll), else a whole one.
func (m *Model) startPollFor(delta bool) tea.Cmd {
	if m.polling || m.poll == nil {
		return nil
	}
	m.polling, m.pollingDelta = true, delta
	m.wake.wanted = false // this poll reads every change reported so far
	if !delta {
		m.wake.wholeAt = m.clock()
	}
	poll, d, fedFn := m.poll, m.pollTimeout, m.fed
	b := m.table.builder(m.seq + 1)
	whole := func(start time.Time, unanswered []string) tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		st := poll(ctx)
		if st == nil {
			return snapshotMsg{took: time.Since(start), unanswered: unanswered}
		}
		fed := fedFn != nil && fedFn()
		built := b.build(st) // off the UI path: rows, sort, filter
		return snapshotMsg{st: st, built: built, took: time.Since(start), fed: fed, unanswered: unanswered}
	}
	if !delta {
		return func() tea.Msg {
			crashtest.Point("cmd")
			return whole(time.Now(), nil)
		}
	}
	read, p := m.delta, m.table.patcher(m.seq+1)
	return func() tea.Msg {
		crashtest.Point("cmd")
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		dl := read(ctx, p.src)
		cancel()
		switch {
		case dl == nil:
			return noDeltaMsg{}
		case len(dl.Unanswered) > 0:
			return whole(start, dl.Unanswered) // its rows are left to a whole poll
		}
		p.patch(dl) // off the UI path
		return deltaMsg{d: dl, patched: p, took: time.Since(start)}
	}
}

// Update turns one message into state and commands; it never blocks.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	crashtest.Point("update")
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.resize()
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		m.forgetExpired()
		var poll tea.Cmd
		switch {
		case m.paused:
		case m.polling && m.pollingDelta:
			poll = m.refresh() // the interval's whole poll, once the Delta is in
		case m.wake.paced(m.clock()):
		default:
			poll = m.startPoll()
		}
		return m, tea.Batch(poll, m.tick(), m.readStored(false))
	case snapshotMsg:
		m.wake.took, m.wake.noDelta, m.wake.fed = msg.took, false, msg.fed
		cmd := m.onSnapshot(msg.st, msg.built)
		if len(msg.unanswered) > 0 {
			m.setStatus(fmt.Sprintf("%s did not answer the read of the live feed's changes: polled whole", clean(strings.Join(msg.unanswered, ", "))), true)
		}
		return m, tea.Batch(cmd, m.wakePoll())
	case deltaMsg:
		m.wake.deltaTook = msg.took
		return m, tea.Batch(m.onDelta(msg.d, msg.patched), m.wakePoll())
	case noDeltaMsg:
		m.polling = false
		m.wake.wanted, m.wake.noDelta = true, true
		if m.pendingRefresh {
			m.pendingRefresh = false
			return m, m.startPoll()
		}
		return m, m.wakePoll()
	case wokenMsg:
		if !m.wake.wanted {
			m.wake.wanted, m.wake.wantedAt = true, m.clock()
		}
		return m, tea.Batch(m.wakePoll(), waitWoken(m.wake.ch))
	case wakeDueMsg:
		m.wake.timer = false
		return m, m.wakePoll()
	case liveMsg:
		if m.paused {
			m.holdLive(msg.events)
		} else {
			for _, e := range msg.events {
				m.live.add(e)
			}
		}
		if msg.closed {
			m.live.feeds["all"] = "stopped"
			return m, nil
		}
		return m, waitLive(m.liveCh)
	case orderMsg:
		m.table.adoptOrder(msg)
		return m, nil
	case historyMsg:
		return m, m.detail.update(msg)
	case storedMsg:
		return m, m.onStored(msg)
	case actionMsg:
		return m, m.onAction(msg)
	case closeDialogMsg:
		m.dialog = nil
		return m, nil
	case actionRequestMsg:
		m.dialog = &pendingDialog{req: msg.req}
		return m, m.actionCmd(msg.req)
	case quitRequestMsg:
		if msg.release {
			return m, m.releaseAllAndQuit()
		}
		return m, m.keepAndQuit()
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
			return m, m.dialog.update(&m.common, msg)
		}
		if m.filtering {
			m.filterInput.Update(msg)
			return m, m.table.setFilter(m.filterInput.Value())
		}
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

// fullHelp renders the `?` help: every key, then a legend of marks and cells. Where
// the key columns are wider than the screen, they are stacked two by two, so that no
// column (nor quit) falls off its right edge; legend lines wrap at their gaps.
func (m *Model) fullHelp(width, height int) []string {
	h := m.help
	groups := m.FullHelp()
	lines := []string{m.styles.Header.Render("Keys"), ""}
	view := h.FullHelpView(groups)
	natural := h // the help cuts columns at its width: measure them without it
	natural.SetWidth(0)
	if maxWidth(natural.FullHelpView(groups)) > width && len(groups) > 2 {
		half := (len(groups) + 1) / 2
		view = h.FullHelpView(groups[:half]) + "\n\n" + h.FullHelpView(groups[half:])
	}
	lines = append(lines, strings.Split(view, "\n")...)
	lines = append(lines, "", m.styles.Header.Render("Legend"))
	for _, l := range [][]string{
		{"  marks   ", "> cursor", "+ changed lately", "* held by this console", "! anomaly", "? uncertain"},
		{"  cells   ", "PTTL: holds the row's value", "~PTTL: holds another value", "-: absent"},
		{"          ", "down/err: master unreachable", "hash, list...: not a string key"},
		{"  states  ", "held", "partial", "split", "no-ttl", "foreign", "free"},
	} {
		lines = append(lines, wrapItems(l[0], l[1:], width)...)
	}
	if m.readOnly {
		lines = append(lines, "", m.styles.Flag.Render("READ-ONLY: actions are disabled"))
	}
	if len(lines) > height {
		lines = lines[:height]
	}
	return lines
}

// maxWidth is the width of the widest line of s.
func maxWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, ansi.StringWidth(l))
	}
	return w
}

// wrapItems writes items after lead, two spaces apart, on as many lines as width
// needs; the lines after the first are indented as far as lead.
func wrapItems(lead string, items []string, width int) []string {
	var lines []string
	line := lead
	for i, it := range items {
		if i > 0 && ansi.StringWidth(line)+2+ansi.StringWidth(it) > width {
			lines = append(lines, line)
			line = strings.Repeat(" ", len(lead)) + it
			continue
		}
		if i > 0 {
			line += "  "
		}
		line += it
	}
	return append(lines, line)
}

// placeCenter centres a block of lines in width×height. A block taller than height
// keeps its first lines (a box's top and title) and its bottom (where a dialog has its
// input and keys), so the field being typed into never falls off the screen.
func placeCenter(block string, width, height int) []string {
	lines := strings.Split(block, "\n")
	switch {
	case len(lines) > height && height >= 6:
		// The box's top and title, then its bottom.
		lines = append([]string{lines[0], lines[1], "  ⋮"}, lines[len(lines)-(height-3):]...)
	case len(lines) > height && height >= 3:
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

// maxLiveHeld bounds the live events kept while the console is paused.
const maxLiveHeld = 1 << 16

// holdLive keeps events that arrive while the console is paused, for when it resumes.
func (m *Model) holdLive(events []live.Event) {
	m.liveHeld = append(m.liveHeld, events...)
	if over := len(m.liveHeld) - maxLiveHeld; over > 0 {
		m.liveDropped += over
		m.liveHeld = append(m.liveHeld[:0], m.liveHeld[over:]...)
	}
}

// resumeLive hands the events held while paused to the live board.
func (m *Model) resumeLive() {
	for _, e := range m.liveHeld {
		m.live.add(e)
	}
	if m.liveDropped > 0 {
		m.setStatus(fmt.Sprintf("polling resumed; %d live events of the pause were not kept", m.liveDropped), true)
	}
	m.liveHeld, m.liveDropped = nil, 0
}

// liveNow is the time the LIVE figures are computed at: now, or the moment the
// console was paused.
func (m *Model) liveNow() time.Time {
	if m.paused {
		return m.pausedAt
	}
	return m.now
}
