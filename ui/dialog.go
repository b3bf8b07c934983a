package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/errkind"
	"github.com/redlockctl/redlockctl/inspect/locks"
)

// dialog is a modal pane over the body: it gets every key until it closes itself
// (m.dialog = nil) or hands over to another dialog.
type dialog interface {
	update(m *Model, msg tea.Msg) tea.Cmd // tea.KeyPressMsg or tea.PasteMsg
	view(m *Model, width int) string
	keys(m *Model) []key.Binding
}

func dialogWidth(width int) int { return max(40, min(width-4, 100)) }

// box draws a dialog: the plain title (wrapped, never cut, so a resource name in it
// can be read whole) and the body lines, each cut to the box.
func (m *Model) box(title string, width int, body []string) string {
	return m.titledBox(title, m.styles.DialogTitle, width, body)
}

func (m *Model) titledBox(title string, st lipgloss.Style, width int, body []string) string {
	inner := dialogWidth(width) - 4
	var lines []string
	for _, l := range wrap(title, inner) {
		lines = append(lines, st.Render(l))
	}
	lines = append(lines, "")
	for _, l := range body {
		lines = append(lines, fit(l, inner))
	}
	return m.styles.DialogBox.Width(inner + 4).Render(strings.Join(lines, "\n"))
}

// fields renders label/value pairs on one line when it fits in width, else the
// first pair wrapped under itself and the others on the next line.
func fields(width int, pairs ...string) []string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, pairs[i]+pairs[i+1])
	}
	if line := strings.Join(parts, "   "); ansi.StringWidth(line) <= width {
		return []string{line}
	}
	out := wrapIndent(pairs[0], pairs[1], width)
	if len(parts) > 1 {
		out = append(out, strings.Join(parts[1:], "   "))
	}
	return out
}

// ---- acquire ----

type acquireDialog struct {
	resource, ttl input
	keepAlive     bool
	focus         int // 0 resource, 1 ttl, 2 keep-alive
	err           string
}

func newAcquireDialog(resource string, ttl time.Duration) *acquireDialog {
	d := &acquireDialog{resource: newInput("resource: ", "name"), ttl: newInput("ttl:      ", "30s"), keepAlive: true}
	d.resource.SetValue(resource)
	d.ttl.SetValue(ttl.String())
	d.ttl.Blur()
	return d
}

func (d *acquireDialog) setFocus(i int) {
	d.focus = (i + 3) % 3
	d.resource.Blur()
	d.ttl.Blur()
	switch d.focus {
	case 0:
		d.resource.Focus()
	case 1:
		d.ttl.Focus()
	}
}

func (d *acquireDialog) update(m *Model, msg tea.Msg) tea.Cmd {
	k := m.dkeys
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(kp, k.Cancel):
			m.dialog = nil
			return nil
		case key.Matches(kp, k.NextField):
			d.setFocus(d.focus + 1)
			return nil
		case key.Matches(kp, k.PrevField):
			d.setFocus(d.focus - 1)
			return nil
		case d.focus == 2 && key.Matches(kp, k.Toggle):
			d.keepAlive = !d.keepAlive
			return nil
		case key.Matches(kp, k.Confirm):
			name := strings.TrimSpace(d.resource.Value())
			ttl, err := time.ParseDuration(strings.TrimSpace(d.ttl.Value()))
			switch {
			case name == "":
				d.err = "resource: give a name"
			case err != nil || ttl <= 0:
				d.err = fmt.Sprintf("ttl: %q is not a positive duration (e.g. 30s, 2m)", d.ttl.Value())
			default:
				req := actionReq{kind: "acquire", resource: name, ttl: ttl, keepAlive: d.keepAlive}
				m.dialog = &pendingDialog{req: req}
				return m.actionCmd(req)
			}
			return nil
		}
	}
	switch d.focus {
	case 0:
		d.resource.Update(msg)
	case 1:
		d.ttl.Update(msg)
	}
	return nil
}

func (d *acquireDialog) view(m *Model, width int) string {
	check := "[ ]"
	if d.keepAlive {
		check = "[x]"
	}
	ka := check + " keep alive (extend every ttl/3 until released or quit)"
	if d.focus == 2 {
		ka = m.styles.Selected.Render(ka)
	}
	body := []string{d.resource.View(), d.ttl.View(), ka, ""}
	body = append(body, m.styles.Dim.Render("Acquires through the redlock library on every master; owner is this console."))
	if d.err != "" {
		body = append(body, m.styles.Crit.Render(d.err))
	}
	return m.box("ACQUIRE", width, body)
}

func (d *acquireDialog) keys(m *Model) []key.Binding {
	return []key.Binding{m.dkeys.Confirm, m.dkeys.NextField, m.dkeys.Toggle, m.dkeys.Cancel}
}

// ---- extend ----

// extendDialog sets a new TTL on the observed value. It shows the value's current
// longest PTTL, pre-fills at least that, and asks twice before shortening it.
type extendDialog struct {
	res     inspect.Resource
	ttl     input
	current time.Duration // longest PTTL of the observed value at the last poll; 0 if none
	warned  bool          // the shortening warning is shown; enter again sends
	err     string
}

// longestPTTL returns the longest positive PTTL among the masters holding r's value.
func longestPTTL(r inspect.Resource) time.Duration {
	var ms int64
	for _, n := range r.Nodes {
		if n.Error == "" && n.Value == r.Value && n.PTTLMs > ms {
			ms = n.PTTLMs
		}
	}
	return time.Duration(ms) * time.Millisecond
}

func newExtendDialog(r inspect.Resource, ttl time.Duration) *extendDialog {
	d := &extendDialog{res: r, ttl: newInput("new ttl: ", "30s"), current: longestPTTL(r)}
	ceil := (d.current + time.Second - 1).Truncate(time.Second)
	d.ttl.SetValue(max(ttl, ceil).String())
	return d
}

func (d *extendDialog) update(m *Model, msg tea.Msg) tea.Cmd {
	k := m.dkeys
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(kp, k.Cancel):
			m.dialog = nil
			return nil
		case key.Matches(kp, k.Confirm):
			ttl, err := time.ParseDuration(strings.TrimSpace(d.ttl.Value()))
			if err != nil || ttl <= 0 {
				d.err = fmt.Sprintf("ttl: %q is not a positive duration (e.g. 30s, 2m)", d.ttl.Value())
				return nil
			}
			if ttl < d.current && !d.warned {
				d.warned = true
				d.err = fmt.Sprintf("shorter than the current %s: enter again to shorten", fmtDur(d.current))
				return nil
			}
			req := actionReq{kind: "extend", resource: d.res.Resource, value: d.res.Value, ttl: ttl}
			m.dialog = &pendingDialog{req: req}
			return m.actionCmd(req)
		}
	}
	before := d.ttl.Value()
	d.ttl.Update(msg)
	if d.ttl.Value() != before {
		d.warned, d.err = false, ""
	}
	return nil
}

func (d *extendDialog) view(m *Model, width int) string {
	inner := dialogWidth(width) - 4
	body := fields(inner, "resource ", clean(d.res.Resource), "holders ", fmt.Sprint(d.res.Holders))
	body = append(body, wrapIndent("value    ", quote(d.res.Value), inner)...)
	current := "none seen"
	if d.current > 0 {
		current = fmtDur(d.current) + " (longest PTTL of this value at the last poll)"
	}
	body = append(body, "current  "+current)
	body = append(body, "", d.ttl.View(), "",
		m.styles.Dim.Render("Extends only where this value is still there (owner-checked PEXPIRE)."))
	if d.err != "" {
		body = append(body, m.styles.Crit.Render(d.err))
	}
	return m.box("EXTEND", width, body)
}

func (d *extendDialog) keys(m *Model) []key.Binding {
	return []key.Binding{m.dkeys.Confirm, m.dkeys.Cancel}
}

// ---- force-release ----

// forceDialog shows what force-release would delete on which master and needs the
// resource name typed back. By default it deletes only where the observed value is
// still there; "any value" is a separate, explicit choice.
type forceDialog struct {
	res        inspect.Resource // as observed when the dialog opened
	target     locks.Lock       // its decoded lock: library, release protocol, warnings
	masters    []inspect.Master
	anyAllowed bool
	anyValue   bool
	confirm    input
	err        string
}

func newForceDialog(s *inspect.Snapshot, r inspect.Resource) *forceDialog {
	d := &forceDialog{res: r, confirm: newInput("> ", "")}
	if s != nil {
		d.masters = s.Masters
		d.target = r.Releasable(s.TakenAt)
	}
	switch r.State {
	case inspect.StateSplit, inspect.StateNoTTL, inspect.StateForeign:
		d.anyAllowed = true
	}
	for _, n := range r.Nodes {
		if (n.Value != "" && n.Value != r.Value) || (n.Type != "" && n.Type != "string" && n.Type != "none" && !n.Holds()) {
			d.anyAllowed = true
		}
	}
	if r.Value == "" {
		d.anyAllowed, d.anyValue = true, true // no observed string value to compare with
	}
	return d
}

func (d *forceDialog) update(m *Model, msg tea.Msg) tea.Cmd {
	k := m.dkeys
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(kp, k.Cancel):
			m.dialog = nil
			return nil
		case key.Matches(kp, k.SwitchMode):
			if d.anyAllowed && d.res.Value != "" {
				d.anyValue = !d.anyValue
			}
			return nil
		case key.Matches(kp, k.Confirm):
			if why := d.target.Release.Unsupported; why != "" {
				d.err = "redlockctl does not release this lock: " + why
				return nil
			}
			if !d.confirmed() {
				d.err = "type the resource name exactly as shown to confirm"
				return nil
			}
			req := actionReq{kind: "force-release", resource: d.res.Resource, value: d.res.Value, target: d.target}
			if d.anyValue {
				req = actionReq{kind: "force-release-any", resource: d.res.Resource, target: d.target}
			}
			m.dialog = &pendingDialog{req: req}
			return m.actionCmd(req)
		}
	}
	d.confirm.Update(msg)
	d.err = ""
	return nil
}

// confirmText is the resource name as the operator can type it back: escaped
// (control and binary bytes Go-escaped) as the dialog shows it.
func (d *forceDialog) confirmText() string { return clean(d.res.Resource) }

// confirmed reports whether the typed text names the resource: raw, as displayed
// (escaped), or double-quoted.
func (d *forceDialog) confirmed() bool {
	v := d.confirm.Value()
	return v == d.res.Resource || v == d.confirmText() || v == quote(d.res.Resource)
}

// plan returns, per master, what the chosen mode would do.
func (d *forceDialog) plan(i int) (action, detail string) {
	if i < len(d.masters) && !d.masters[i].Up {
		ms := d.masters[i]
		return "try", "down (" + kindOf(ms.ErrorKind, ms.Error).String() + "), sent anyway: " + clean(ms.Error)
	}
	if i >= len(d.res.Nodes) {
		return "?", ""
	}
	n := d.res.Nodes[i]
	switch {
	case n.Error != "":
		return "try", "error (" + kindOf(n.ErrorKind, n.Error).String() + "), sent anyway: " + clean(n.Error)
	case n.Type != "" && n.Type != "string" && n.Type != "none" && !n.Holds():
		if d.anyValue {
			return "DELETE", "a " + clean(n.Type) + " key"
		}
		return "keep", "a " + clean(n.Type) + " key (not a lock value)"
	case n.PTTLMs == -2:
		return "nothing", "absent"
	case n.Value == d.res.Value:
		return "DELETE", "the observed value, pttl " + fmtPTTL(n.PTTLMs)
	case d.anyValue:
		return "DELETE", quote(n.Value) + "  pttl " + fmtPTTL(n.PTTLMs) + "  (another value)"
	default:
		return "keep", quote(n.Value) + "  (another value)"
	}
}

func (d *forceDialog) view(m *Model, width int) string {
	st := m.styles
	inner := dialogWidth(width) - 4
	r := d.res
	body := fields(inner, "key ", quote(r.Key), "state ", r.State, "holders ", fmt.Sprintf("%d/%d", r.Holders, len(d.masters)))
	radio := func(on bool) string {
		if on {
			return "(*)"
		}
		return "( )"
	}
	if r.Value != "" {
		body = append(body, radio(!d.anyValue)+" only where the observed value is still there (compare-and-delete):")
		body = append(body, wrapIndent("    ", quote(r.Value), inner)...)
	}
	if d.anyAllowed {
		body = append(body, radio(d.anyValue)+" any value: delete the key on every master whatever it holds")
	}
	if l := d.target; l.Library != "" && l.Library != locks.Redlockctl {
		lib := l.Library
		if l.Kind != "" {
			lib += " " + l.Kind
		}
		body = append(body, wrapIndent("library  ", clean(lib+": "+l.Evidence), inner)...)
		if l.Release.Supported() {
			body = append(body, wrapIndent("protocol ", clean(l.Release.Protocol+": "+l.Release.Summary), inner)...)
		}
		if l.Recreates != "" {
			for _, s := range wrapIndent("WARNING  ", clean(l.Recreates)+": stop the holder's process first, or the lock comes back", inner) {
				body = append(body, st.Crit.Render(s))
			}
		}
		if l.Release.Unsupported != "" {
			for _, s := range wrapIndent("cannot   ", clean(l.Release.Unsupported), inner) {
				body = append(body, st.Crit.Render(s))
			}
		}
	}
	body = append(body, "", st.ColTitle.Render(fit("MASTER", 24)+" "+fit("ACTION", 8)+" WHAT"))
	for i := range max(len(d.masters), len(r.Nodes)) {
		name := ""
		if i < len(d.masters) {
			name = clean(d.masters[i].Name) + " " + clean(d.masters[i].Addr)
		} else if i < len(r.Nodes) {
			name = clean(r.Nodes[i].Master)
		}
		action, what := d.plan(i)
		a := fit(action, 8)
		if action == "DELETE" {
			a = st.Danger.Render(a)
		}
		body = append(body, fit(name, 24)+" "+a+" "+what)
	}
	body = append(body, "")
	if d.confirmText() != d.res.Resource {
		body = append(body, "Type the resource name to confirm, escaped as shown:")
	} else {
		body = append(body, "Type the resource name to confirm:")
	}
	body = append(body, wrapIndent("  ", d.confirmText(), inner)...)
	body = append(body, d.confirm.View())
	if d.err != "" {
		body = append(body, st.Crit.Render(d.err))
	}
	title := "FORCE-RELEASE " + clean(r.Resource)
	if ansi.StringWidth(title) > inner-len(" (ANY VALUE)") {
		title = "FORCE-RELEASE (the resource named below)" // shown whole once, not twice
	}
	if d.anyValue {
		title += " (ANY VALUE)"
	}
	return m.titledBox(title, st.Danger, width, body)
}

func (d *forceDialog) keys(m *Model) []key.Binding {
	ks := []key.Binding{m.dkeys.Confirm}
	if d.anyAllowed && d.res.Value != "" {
		ks = append(ks, m.dkeys.SwitchMode)
	}
	return append(ks, m.dkeys.Cancel)
}

// ---- pending and result ----

// pendingDialog waits for an action's result; esc hides it (the result still lands
// in the status line).
type pendingDialog struct{ req actionReq }

func (d *pendingDialog) update(m *Model, msg tea.Msg) tea.Cmd {
	if kp, ok := msg.(tea.KeyPressMsg); ok && key.Matches(kp, m.dkeys.Cancel) {
		m.dialog = nil
	}
	return nil
}

func (d *pendingDialog) view(m *Model, width int) string {
	return m.box(strings.ToUpper(d.req.kind)+" "+clean(d.req.resource), width,
		[]string{"running… (deadline " + fmtDur(m.actionTimeout) + ")"})
}

func (d *pendingDialog) keys(m *Model) []key.Binding {
	c := m.dkeys.Cancel
	c.SetHelp("esc", "hide")
	return []key.Binding{c}
}

// resultDialog shows an action's per-master result.
type resultDialog struct{ msg actionMsg }

func (d *resultDialog) update(m *Model, msg tea.Msg) tea.Cmd {
	if kp, ok := msg.(tea.KeyPressMsg); ok && (key.Matches(kp, m.dkeys.Cancel) || key.Matches(kp, m.dkeys.Confirm)) {
		m.dialog = nil
	}
	return nil
}

func (d *resultDialog) view(m *Model, width int) string {
	st := m.styles
	r := d.msg.result
	req := d.msg.req
	var body []string
	inner := dialogWidth(width) - 4
	sst := st.OK
	if d.msg.err != nil {
		sst = st.Crit
	}
	for _, l := range wrap(resultSummary(req, d.msg), inner) {
		body = append(body, sst.Render(l))
	}
	value := req.value
	if req.kind == "acquire" {
		value = d.msg.lockValue
	}
	if value != "" {
		body = append(body, wrapIndent("value ", quote(value), inner)...)
	}
	if d.msg.token > 0 {
		body = append(body, fmt.Sprintf("fence token %d", d.msg.token))
	}
	if len(r.Nodes) > 0 {
		body = append(body, "", st.ColTitle.Render(fit("MASTER", 10)+" "+fit("OUTCOME", 8)+" ERROR"))
		for _, n := range r.Nodes {
			o := fit(clean(n.Outcome), 8)
			if n.Outcome == "ok" {
				o = st.OK.Render(o)
			} else {
				o = st.Warn.Render(o)
			}
			what := clean(n.Error)
			if n.ErrorKind != errkind.None {
				what = errText(n.ErrorKind, n.Error)
			}
			body = append(body, fit(clean(n.Master), 10)+" "+o+" "+what)
		}
	}
	return m.box("RESULT "+strings.ToUpper(req.kind)+" "+clean(req.resource), width, body)
}

func (d *resultDialog) keys(m *Model) []key.Binding {
	c := m.dkeys.Cancel
	c.SetHelp("esc/enter", "close")
	return []key.Binding{c}
}

// ---- quit while holding ----

type quitDialog struct {
	releasing bool
	count     int
}

func (d *quitDialog) update(m *Model, msg tea.Msg) tea.Cmd {
	kp, ok := msg.(tea.KeyPressMsg)
	if !ok || d.releasing {
		return nil
	}
	switch {
	case key.Matches(kp, m.dkeys.ReleaseQuit):
		d.releasing, d.count = true, len(m.held)
		return m.releaseAllAndQuit()
	case key.Matches(kp, m.dkeys.KeepQuit), kp.String() == "ctrl+c":
		return m.keepAndQuit()
	case key.Matches(kp, m.dkeys.Cancel):
		m.dialog = nil
	}
	return nil
}

func (d *quitDialog) view(m *Model, width int) string {
	if d.releasing {
		return m.box("QUIT", width, []string{fmt.Sprintf("releasing %d lock(s)…", d.count)})
	}
	body := []string{fmt.Sprintf("This console holds %d lock(s):", len(m.held))}
	now := m.clock()
	for _, r := range m.Held() {
		h := m.held[r]
		how := "kept alive, ttl " + fmtDur(h.ttl)
		if !h.keepAlive {
			how = "not kept alive, expires within " + fmtDur(h.expiresWithin(now))
		}
		body = append(body, wrapIndent("  ", fmt.Sprintf("%s  %s  value %s", clean(r), how, quote(h.value)), dialogWidth(width)-4)...)
	}
	body = append(body, "", "r    release them and quit",
		"k    keep them and quit (they expire within their ttl)", "esc  cancel")
	return m.box("QUIT", width, body)
}

func (d *quitDialog) keys(m *Model) []key.Binding {
	return []key.Binding{m.dkeys.ReleaseQuit, m.dkeys.KeepQuit, m.dkeys.Cancel}
}
