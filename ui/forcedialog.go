package ui

import (
	"errors"
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
)

// forceDialog shows what force-release would delete on which master and needs the
// resource name typed back. What it shows and what it sends is one admin.ForcePlan,
// the same the CLI prints and runs for the same row: by default it deletes the value a
// quorum holds, only where that value is still there, and refuses a row without one;
// "any value" is a separate, explicit choice.
type forceDialog struct {
	snap       *inspect.Snapshot
	res        inspect.Resource // as observed when the dialog opened
	masters    []inspect.Master
	plan       admin.ForcePlan // for the mode chosen now
	anyAllowed bool
	anyValue   bool
	confirm    input
	err        string
}

func newForceDialog(s *inspect.Snapshot, r inspect.Resource) *forceDialog {
	d := &forceDialog{snap: s, res: r, confirm: newInput("> ", "")}
	if s != nil {
		d.masters = s.Masters
	}
	switch r.State {
	case inspect.StateSplit, inspect.StateNoTTL, inspect.StateForeign, inspect.StatePartial:
		d.anyAllowed = true
	}
	for _, n := range r.Nodes {
		if (n.Value != "" && n.Value != r.Value) || n.Seen().NotALock() {
			d.anyAllowed = true
		}
	}
	if r.Value == "" {
		d.anyAllowed, d.anyValue = true, true // no observed string value to compare with
	}
	d.replan()
	return d
}

// replan builds the plan of the mode chosen now.
func (d *forceDialog) replan() {
	if d.snap == nil {
		d.plan = admin.ForcePlan{Resource: d.res.Resource, Err: errors.New("no snapshot")}
		return
	}
	d.plan = admin.NewForcePlan(d.snap.Quorum, d.snap, d.res, d.anyValue)
}

func (d *forceDialog) update(c *common, msg tea.Msg) tea.Cmd {
	k := c.dkeys
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(kp, k.Cancel):
			return tell(closeDialogMsg{})
		case key.Matches(kp, k.SwitchMode):
			if d.anyAllowed && d.res.Value != "" {
				d.anyValue = !d.anyValue
				d.replan()
			}
			return nil
		case key.Matches(kp, k.Confirm):
			if d.plan.Err != nil {
				d.err = "nothing will be deleted: " + clean(d.plan.Err.Error())
				return nil
			}
			if !d.confirmed() {
				d.err = "type the resource name exactly as shown to confirm"
				return nil
			}
			kind := "force-release"
			if d.anyValue {
				kind = "force-release-any"
			}
			req := actionReq{kind: kind, resource: d.res.Resource, value: d.plan.Value, plan: d.plan}
			return tell(actionRequestMsg{req})
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

// step returns, per master, the plan's step as the dialog shows it.
func (d *forceDialog) step(i int) (action, detail string) {
	if i >= len(d.plan.Steps) {
		return "?", ""
	}
	s := d.plan.Steps[i]
	switch s.Kind {
	case admin.StepUnknown:
		what := "down"
		if i < len(d.masters) && d.masters[i].Up {
			what = "error"
		}
		return "try", what + " (" + kindOf(s.ErrorKind, s.Error).String() + "), only the plan's compare-and-delete: " + clean(s.Error)
	case admin.StepAbsent:
		return "nothing", "absent"
	case admin.StepHolds:
		return "holds", quote(s.Value) + "  pttl " + fmtPTTL(s.PTTLMs)
	case admin.StepUntouched:
		return "untouched", "single-instance lock: nothing is sent to this master"
	case admin.StepDelete:
		if s.Value == d.res.Value {
			return "DELETE", "the observed value, pttl " + fmtPTTL(s.PTTLMs)
		}
		return "DELETE", quote(s.Value) + "  pttl " + fmtPTTL(s.PTTLMs) + "  (another value)"
	}
	if s.Type != "" {
		return "keep", "a " + clean(s.Type) + " key (not a lock value)"
	}
	return "keep", quote(s.Value) + "  (another value)"
}

func (d *forceDialog) view(c *common, width int) string {
	st := c.styles
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
		body = append(body, radio(d.anyValue)+" any value: on each master, the value observed there (compare-and-delete)")
	}
	if d.plan.Err != nil {
		for _, s := range wrapIndent("refused  ", clean(d.plan.Err.Error()), inner) {
			body = append(body, st.Crit.Render(s))
		}
	}
	if l := d.plan.Lock; l.Library != "" && l.Library != locks.Redlockctl {
		lib := l.Label() // a guess shows as one: "redsync?"
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
		action, what := d.step(i)
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
	return c.titledBox(title, st.Danger, width, body)
}

func (d *forceDialog) keys(c *common) []key.Binding {
	ks := []key.Binding{c.dkeys.Confirm}
	if d.anyAllowed && d.res.Value != "" {
		ks = append(ks, c.dkeys.SwitchMode)
	}
	return append(ks, c.dkeys.Cancel)
}

// ---- pending and result ----
