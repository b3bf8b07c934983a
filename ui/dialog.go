package ui

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// dialog is a modal pane over the body: it gets every key until it asks its parent to
// close it (closeDialogMsg) or to run an action (actionRequestMsg). It changes only
// itself.
type dialog interface {
	update(c *common, msg tea.Msg) tea.Cmd // tea.KeyPressMsg or tea.PasteMsg
	view(c *common, width int) string
	keys(c *common) []key.Binding
}

func dialogWidth(width int) int { return max(40, min(width-4, 100)) }

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

func (d *acquireDialog) update(c *common, msg tea.Msg) tea.Cmd {
	k := c.dkeys
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(kp, k.Cancel):
			return tell(closeDialogMsg{})
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
				return tell(actionRequestMsg{req})
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

func (d *acquireDialog) view(c *common, width int) string {
	check := "[ ]"
	if d.keepAlive {
		check = "[x]"
	}
	ka := check + " keep alive (extend every ttl/3 until released or quit)"
	if d.focus == 2 {
		ka = c.styles.Selected.Render(ka)
	}
	body := []string{d.resource.View(), d.ttl.View(), ka, ""}
	body = append(body, c.styles.Dim.Render("Acquires through the redlock library on every master; owner is this console."))
	if d.err != "" {
		body = append(body, c.styles.Crit.Render(d.err))
	}
	return c.box("ACQUIRE", width, body)
}

func (d *acquireDialog) keys(c *common) []key.Binding {
	return []key.Binding{c.dkeys.Confirm, c.dkeys.NextField, c.dkeys.Toggle, c.dkeys.Cancel}
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

func (d *extendDialog) update(c *common, msg tea.Msg) tea.Cmd {
	k := c.dkeys
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(kp, k.Cancel):
			return tell(closeDialogMsg{})
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
			return tell(actionRequestMsg{req})
		}
	}
	before := d.ttl.Value()
	d.ttl.Update(msg)
	if d.ttl.Value() != before {
		d.warned, d.err = false, ""
	}
	return nil
}

func (d *extendDialog) view(c *common, width int) string {
	inner := dialogWidth(width) - 4
	body := fields(inner, "resource ", clean(d.res.Resource), "holders ", fmt.Sprint(d.res.Holders))
	body = append(body, wrapIndent("value    ", quote(d.res.Value), inner)...)
	current := "none seen"
	if d.current > 0 {
		current = fmtDur(d.current) + " (longest PTTL of this value at the last poll)"
	}
	body = append(body, "current  "+current)
	body = append(body, "", d.ttl.View(), "",
		c.styles.Dim.Render("Extends only where this value is still there (owner-checked PEXPIRE)."))
	if d.err != "" {
		body = append(body, c.styles.Crit.Render(d.err))
	}
	return c.box("EXTEND", width, body)
}

func (d *extendDialog) keys(c *common) []key.Binding {
	return []key.Binding{c.dkeys.Confirm, c.dkeys.Cancel}
}

// ---- force-release ----

// pendingDialog waits for an action's result; esc hides it (the result still lands
// in the status line).
type pendingDialog struct{ req actionReq }

func (d *pendingDialog) update(c *common, msg tea.Msg) tea.Cmd {
	if kp, ok := msg.(tea.KeyPressMsg); ok && key.Matches(kp, c.dkeys.Cancel) {
		return tell(closeDialogMsg{})
	}
	return nil
}

func (d *pendingDialog) view(c *common, width int) string {
	return c.box(strings.ToUpper(d.req.kind)+" "+clean(d.req.resource), width,
		[]string{"running… (deadline " + fmtDur(c.actionTimeout) + ")"})
}

func (d *pendingDialog) keys(c *common) []key.Binding {
	cancel := c.dkeys.Cancel
	cancel.SetHelp("esc", "hide")
	return []key.Binding{cancel}
}

// resultDialog shows an action's per-master result.
type resultDialog struct{ msg actionMsg }

func (d *resultDialog) update(c *common, msg tea.Msg) tea.Cmd {
	if kp, ok := msg.(tea.KeyPressMsg); ok && (key.Matches(kp, c.dkeys.Cancel) || key.Matches(kp, c.dkeys.Confirm)) {
		return tell(closeDialogMsg{})
	}
	return nil
}

func (d *resultDialog) view(c *common, width int) string {
	st := c.styles
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
			body = append(body, wrapIndent(fit(clean(n.Master), 10)+" "+o+" ", what, inner)...)
		}
	}
	return c.box("RESULT "+strings.ToUpper(req.kind)+" "+clean(req.resource), width, body)
}

func (d *resultDialog) keys(c *common) []key.Binding {
	cancel := c.dkeys.Cancel
	cancel.SetHelp("esc/enter", "close")
	return []key.Binding{cancel}
}

// ---- quit while holding ----

// quitDialog asks what to do with the locks this console holds. It reads them (the
// Model's map, never written here) and asks the Model to quit.
type quitDialog struct {
	held      map[string]*heldLock
	releasing bool
	count     int
}

func (d *quitDialog) update(c *common, msg tea.Msg) tea.Cmd {
	kp, ok := msg.(tea.KeyPressMsg)
	if !ok || d.releasing {
		return nil
	}
	switch {
	case key.Matches(kp, c.dkeys.ReleaseQuit):
		d.releasing, d.count = true, len(d.held)
		return tell(quitRequestMsg{release: true})
	case key.Matches(kp, c.dkeys.KeepQuit), kp.String() == "ctrl+c":
		return tell(quitRequestMsg{})
	case key.Matches(kp, c.dkeys.Cancel):
		return tell(closeDialogMsg{})
	}
	return nil
}

func (d *quitDialog) view(c *common, width int) string {
	if d.releasing {
		return c.box("QUIT", width, []string{fmt.Sprintf("releasing %d lock(s)…", d.count)})
	}
	body := []string{fmt.Sprintf("This console holds %d lock(s):", len(d.held))}
	now := c.clock()
	names := slices.Sorted(maps.Keys(d.held))
	for _, r := range names {
		h := d.held[r]
		how := "kept alive, ttl " + fmtDur(h.ttl)
		if !h.keepAlive {
			how = "not kept alive, expires within " + fmtDur(h.expiresWithin(now))
		}
		body = append(body, wrapIndent("  ", fmt.Sprintf("%s  %s  value %s", clean(r), how, quote(h.value)), dialogWidth(width)-4)...)
	}
	body = append(body, "", "r    release them and quit",
		"k    keep them and quit (they expire within their ttl)", "esc  cancel")
	return c.box("QUIT", width, body)
}

func (d *quitDialog) keys(c *common) []key.Binding {
	return []key.Binding{c.dkeys.ReleaseQuit, c.dkeys.KeepQuit, c.dkeys.Cancel}
}
