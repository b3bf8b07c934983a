package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock"
)

// StepKind says what a force-release does on one master.
type StepKind string

// The kinds of a ForcePlan step.
const (
	// StepDelete: the key is deleted there (the planned value, compared first, unless
	// the plan is any-value).
	StepDelete StepKind = "delete"
	// StepKeep: another value, or a key that is not a lock string: left alone.
	StepKeep StepKind = "keep"
	// StepAbsent: the master answered and holds nothing at the key.
	StepAbsent StepKind = "absent"
	// StepUnknown: the master did not answer the observation; the delete is tried.
	StepUnknown StepKind = "unknown"
	// StepHolds: a refused plan's view of what the master holds (nothing is sent).
	StepHolds StepKind = "holds"
	// StepUntouched: a single-instance lock's plan sends nothing to this master.
	StepUntouched StepKind = "untouched"
)

// Step is one master's part of a ForcePlan.
type Step struct {
	Master, Addr string
	Kind         StepKind
	Value        string // the value observed there ("" when absent or not a string)
	PTTLMs       int64  // its PTTL (-1 no expiry, -2 absent)
	Type         string // the key's type when it is not a lock string
	// Release is, for a StepDelete, the release of the value observed there, by its
	// library's protocol: its Checked script deletes only while that value is there.
	Release   locks.Release
	Error     string       // StepUnknown: why the master's state is not known (scrubbed)
	ErrorKind errkind.Kind // StepUnknown: the error's kind
}

// ForcePlan is what a force-release deletes on which master, decided once from one
// observation of the key. The CLI prints it and asks for confirmation; the console
// shows it in its dialog; Actions.ForceRelease carries it out. Both front ends build it
// here, so they refuse and delete alike.
//
// A plan is a contract: it deletes, on each master, only the value it showed there, and
// only while that value is still there (each value's own library release step, which
// compares first). Without AnyValue it deletes the value a quorum of masters holds, and
// a row that no value holds on a quorum (split, partial, free) is refused. With
// AnyValue it deletes each master's observed value, whichever it is, and a row that
// gives no reason to (AnyValueRefusal) is refused. A key that is not a lock (another
// type no decoder recognises) is never deleted, and a master the plan could not read
// gets no blind delete: only the compare-and-deletes of the plan's values reach it.
type ForcePlan struct {
	Resource, Key string
	State         string
	Quorum        int
	AnyValue      bool
	Value         string // the quorum value compared before each delete ("" with AnyValue)
	// Single is set for a single-instance lock (scope single): each value is deleted on
	// the master where the plan saw it, and nothing is sent to any other master.
	Single bool
	Lock   locks.Lock // the observed lock, decoded: its library and release protocol
	Steps  []Step     // per master, in config order
	Err    error      // non-nil: the plan is refused and nothing will be sent
}

// NewForcePlan decides what force-releasing row, observed in snap, deletes on each
// master. quorum is the fleet's quorum.
func NewForcePlan(quorum int, snap *inspect.Snapshot, row inspect.Resource, anyValue bool) ForcePlan {
	p := ForcePlan{Resource: row.Resource, Key: row.Key, State: row.State, Quorum: quorum,
		AnyValue: anyValue, Lock: row.Releasable(snap.TakenAt), Single: row.Scope == locks.ScopeSingle}
	up := 0
	for _, m := range snap.Masters {
		if m.Up {
			up++
		}
	}
	switch {
	case anyValue && AnyValueRefusal(row) != nil:
		p.Err = AnyValueRefusal(row)
	case p.Single && !anyValue && row.Value == "":
		p.Err = fmt.Errorf("%q: no master holds a single-instance lock there: nothing deleted", row.Resource)
	case p.Single && !anyValue:
		p.Value = row.Value
	case !anyValue && (row.Value == "" || row.Holders < quorum):
		why := fmt.Sprintf("state %s", row.State)
		switch {
		case row.State == inspect.StateFree || absentEverywhere(row):
			why = "no master holds it"
		case row.Value != "":
			why = fmt.Sprintf("state %s: the most common value is on %d master(s), quorum is %d", row.State, row.Holders, quorum)
		}
		if up < quorum {
			why += fmt.Sprintf("; only %d of %d masters answered", up, len(snap.Masters))
		}
		p.Err = fmt.Errorf("no value of %q is held by a quorum (%s): nothing deleted; --any-value deletes whatever each master holds", row.Resource, why)
	case !anyValue:
		p.Value = row.Value
	case absentEverywhere(row) && up == len(snap.Masters):
		p.Err = fmt.Errorf("%q is not present on any master: nothing to delete", row.Resource)
	}
	if why := p.Lock.Release.Unsupported; why != "" && p.Err == nil {
		p.Err = fmt.Errorf("%s lock: redlockctl does not release it: %s", p.Lock.Label(), why)
	}
	p.Steps = p.steps(snap, row)
	for _, st := range p.Steps {
		if why := st.Release.Unsupported; st.Kind == StepDelete && why != "" && p.Err == nil {
			p.Err = fmt.Errorf("%s on %s: redlockctl does not release it: %s", strconv.Quote(st.Value), st.Master, why)
		}
	}
	return p
}

// AnyValueRefusal is the rule for when a force-release of row may be planned with
// AnyValue (on each master, the value observed there) rather than for the one value a
// quorum holds. Any value is offered (nil) when the row gives no single value to
// compare with: it has no holding value; its state is split, partial, no-ttl or
// foreign; or a master holds another value, or a key that is not a lock. Otherwise
// every master that answered holds the row's value or nothing, the plan without
// AnyValue already deletes all there is, and the error says so. NewForcePlan refuses
// an AnyValue plan this refuses, so the CLI (release --force --any-value) and the
// console's force-release dialog, which both plan there, obey the same rule.
func AnyValueRefusal(row inspect.Resource) error {
	if row.Value == "" {
		return nil
	}
	switch row.State {
	case inspect.StateSplit, inspect.StatePartial, inspect.StateNoTTL, inspect.StateForeign:
		return nil
	}
	for _, n := range row.Nodes {
		if (n.Value != "" && n.Value != row.Value) || n.Seen().NotALock() {
			return nil
		}
	}
	return fmt.Errorf("any value refused for %q (state %s): every master that answered holds its value %s or nothing, so there is no other value to delete: force-release it without --any-value", row.Resource, row.State, strconv.Quote(row.Value))
}

func absentEverywhere(row inspect.Resource) bool {
	for _, n := range row.Nodes {
		if n.Value != "" || (n.Type != "" && n.Type != "none" && n.Type != "string") {
			return false
		}
	}
	return true
}

// releaseOf is the release of the value node n holds for row: its lock's, as
// locks.Identify answers it (compare-and-delete when none is recognised).
func releaseOf(row inspect.Resource, n inspect.Node, now time.Time) locks.Release {
	return locks.Identify(row.Key, n.Value, []locks.Seen{n.Seen()}, now).Release()
}

func (p ForcePlan) steps(snap *inspect.Snapshot, row inspect.Resource) []Step {
	steps := make([]Step, len(snap.Masters))
	for i, m := range snap.Masters {
		var n inspect.Node
		if i < len(row.Nodes) {
			n = row.Nodes[i]
		}
		s := Step{Master: m.Name, Addr: m.Addr, Value: n.Value, PTTLMs: n.PTTLMs}
		switch {
		case !m.Up || n.Error != "":
			s.Kind, s.ErrorKind, s.Error = StepUnknown, n.ErrorKind, n.Error
			if s.Error == "" {
				s.ErrorKind, s.Error = m.ErrorKind, m.Error
			}
			if s.ErrorKind == errkind.None && s.Error != "" {
				s.ErrorKind = errkind.OfText(s.Error)
			}
		case n.Seen().NotALock():
			s.Type, s.Kind = n.Type, StepKeep // not a lock: nothing deletes it
		case n.Value == "":
			s.Kind = StepAbsent
		case p.AnyValue && p.Err == nil:
			s.Kind, s.Release = StepDelete, releaseOf(row, n, snap.TakenAt)
		case p.AnyValue:
			s.Kind = StepHolds // a refused plan deletes nothing
		case p.Value != "" && n.Value == p.Value:
			s.Kind, s.Release = StepDelete, p.Lock.Release
		case p.Value == "":
			s.Kind = StepHolds
		default:
			s.Kind = StepKeep
		}
		if p.Single && s.Kind != StepDelete {
			s.Kind = StepUntouched
		}
		steps[i] = s
	}
	return steps
}

// Write prints the plan as the CLI shows it before asking for confirmation: one line
// for the key and what is deleted, one line per master, then the lock's library and
// release protocol. Every text that came from a server is escaped.
func (p ForcePlan) Write(w io.Writer) {
	what := "delete where the quorum value is still there (compare-and-delete)"
	switch {
	case p.Err != nil:
		what = "what each master holds (nothing will be deleted)"
	case p.AnyValue:
		what = "delete, on each master, the value observed there, where it still is (compare-and-delete)"
	case p.Lock.Release.Protocol != "" && p.Lock.Release.Protocol != locks.ProtoCompareAndDelete:
		what = "delete where the quorum holder is still there (" + p.Lock.Release.Protocol + ")"
	}
	if p.Single && p.Err == nil {
		what = "single-instance lock: delete it on its own master only (" + strings.Join(p.deleteOn(), ", ") + "), by its library's release step; no other master is sent anything"
	}
	fmt.Fprintf(w, "force-release %q (key %q, state %s, quorum %d): %s\n", p.Resource, p.Key, p.State, p.Quorum, what)
	width := 0
	for _, s := range p.Steps {
		width = max(width, len(s.Master))
	}
	for _, s := range p.Steps {
		fmt.Fprintf(w, "  %-*s  %-21s  %s\n", width, s.Master, s.Addr, s.text())
	}
	p.writeLibrary(w)
}

// deleteOn names the masters the plan deletes on.
func (p ForcePlan) deleteOn() []string {
	var on []string
	for _, s := range p.Steps {
		if s.Kind == StepDelete {
			on = append(on, s.Master)
		}
	}
	return on
}

// text is a step as the CLI prints it.
func (s Step) text() string {
	switch s.Kind {
	case StepUnknown:
		return "unknown (" + s.unanswered() + "): gets only the compare-and-delete of the values above"
	case StepUntouched:
		return "untouched: another master's single-instance lock; nothing is sent here"
	case StepAbsent:
		return "absent"
	case StepHolds:
		return fmt.Sprintf("holds %s (%s)", strconv.Quote(s.Value), pttlText(s.PTTLMs))
	}
	if s.Type != "" {
		return fmt.Sprintf("keep: %s key (not a lock: redlockctl never deletes it)", s.Type)
	}
	if s.Kind == StepDelete {
		return fmt.Sprintf("DELETE %s (%s): sends %s", strconv.Quote(s.Value), pttlText(s.PTTLMs),
			printable(commandOf(s.Release.Protocol, s.Release.Checked)))
	}
	return fmt.Sprintf("keep: other value %s (%s)", strconv.Quote(s.Value), pttlText(s.PTTLMs))
}

// unanswered says why a master's part of a plan is unknown: the error's kind, the
// message (already scrubbed, escaped here) and what to check.
func (s Step) unanswered() string {
	if s.Error == "" {
		return "did not answer"
	}
	return fmt.Sprintf("did not answer, %s: %s; %s", s.ErrorKind, report.Escape(s.Error), s.ErrorKind.Hint())
}

func pttlText(ms int64) string {
	switch {
	case ms == -1:
		return "no ttl"
	case ms < 0:
		return "absent"
	}
	return "ttl " + (time.Duration(ms) * time.Millisecond).String()
}

// writeLibrary says whose lock it is, which release protocol runs, and warns when the
// holder puts a deleted key back.
func (p ForcePlan) writeLibrary(w io.Writer) {
	l := p.Lock
	if l.Library == "" || l.Library == locks.Redlockctl {
		return
	}
	lib := l.Label()
	if l.Kind != "" {
		lib += " " + l.Kind
	}
	fmt.Fprintf(w, "  library   %s: %s\n", lib, l.Evidence)
	if p.Err == nil {
		fmt.Fprintf(w, "  protocol  %s: %s\n", l.Release.Protocol, l.Release.Summary)
	}
	if l.Recreates != "" {
		fmt.Fprintf(w, "  WARNING   %s: stop the holder's process first, or the lock comes back\n", l.Recreates)
	}
}

// ForceRelease carries out p: nothing when p was refused (its Err is returned), else,
// for each value the plan deletes, that value's own release step (which compares
// first) on every master. A value is unique to one acquisition, so its compare-and-
// delete changes only masters where the plan showed it (or where that same
// acquisition's write has landed since); a master that holds another value, or that the
// plan could not read, is left alone unless it holds one of those values. The outcome
// line names, per master, the value deleted there.
func (a *Actions) ForceRelease(ctx context.Context, p ForcePlan) (ActionResult, error) {
	if err := a.gate(); err != nil {
		return ActionResult{}, err
	}
	if p.Err != nil {
		return ActionResult{}, p.Err
	}
	action := ActionForceRelease
	if p.AnyValue {
		action = ActionForceReleaseAny
	}
	// One run per distinct release step (the same value's scripts are identical).
	type run struct {
		script  locks.Script
		value   string
		masters []int
	}
	var runs []*run
	byScript := map[string]*run{}
	for i, st := range p.Steps {
		if st.Kind != StepDelete {
			continue
		}
		c := st.Release.Checked
		k := c.Lua + "\x00" + strings.Join(c.Keys, "\x00") + "\x00" + strings.Join(c.Args, "\x00")
		if byScript[k] == nil {
			byScript[k] = &run{script: c, value: st.Value}
			runs = append(runs, byScript[k])
		}
		byScript[k].masters = append(byScript[k].masters, i)
	}
	if len(runs) == 0 {
		return ActionResult{}, fmt.Errorf("admin: %s %q: the plan deletes nothing", action, p.Resource)
	}
	r, err := a.start(action, p.Resource, p.Value, p.planned())
	if err != nil {
		return r, err
	}
	r.Library, r.Protocol = p.Lock.Label(), p.Lock.Release.Protocol
	if p.Single {
		r.Quorum = len(p.deleteOn()) // judged on the plan's own masters, not the fleet's quorum
	}
	merged := redlock.Result{Nodes: make([]redlock.NodeResult, len(a.cfg.Masters))}
	for i := range merged.Nodes {
		merged.Nodes[i].Master = -1 // no reply merged: fill leaves it not sent
	}
	deleted := make([]string, len(merged.Nodes))
	var firstErr error
	for ri, rn := range runs {
		var res redlock.Result
		var err error
		if p.Single {
			res, err = a.client.RunScriptOn(ctx, rn.masters, redlock.NewScript(rn.script.Lua), rn.script.Keys, rn.script.Args...)
		} else {
			res, err = a.client.RunScript(ctx, redlock.NewScript(rn.script.Lua), rn.script.Keys, rn.script.Args...)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		var qe *redlock.QuorumError
		if len(res.Nodes) == 0 && errors.As(err, &qe) {
			res = qe.Result
		}
		for _, nr := range res.Nodes {
			if nr.Master < 0 || nr.Master >= len(merged.Nodes) {
				continue
			}
			mine := slices.Contains(rn.masters, nr.Master)
			if mine || (ri == 0 && p.Steps[nr.Master].Kind != StepDelete) {
				merged.Nodes[nr.Master] = nr
				if mine && nr.Outcome == redlock.OK {
					deleted[nr.Master] = rn.value
				}
			}
		}
	}
	if len(runs) > 1 && firstErr != nil && merged.Count(redlock.OK) >= r.Quorum {
		firstErr = nil // each run alone may miss a quorum; together they deleted
	}
	a.fill(&r, merged, firstErr)
	for i := range r.Nodes {
		r.Nodes[i].Value = deleted[i]
		if p.Single && p.Steps[i].Kind == StepUntouched {
			r.Nodes[i].Outcome, r.Nodes[i].Error = OutcomeUntouched, ""
		}
	}
	return a.finish(r), firstErr
}

// planned is the plan as the audit log's intent line states it: per master, the command
// and the value it deletes there ("none" where nothing is deleted).
func (p ForcePlan) planned() []NodeOutcome {
	ns := make([]NodeOutcome, len(p.Steps))
	for i, s := range p.Steps {
		n := NodeOutcome{Master: s.Master, Outcome: "planned", Command: "none"}
		switch s.Kind {
		case StepDelete:
			n.Command, n.Value = commandOf(s.Release.Protocol, s.Release.Checked), s.Value
		case StepUnknown:
			n.Command = "not observed: only the plan's compare-and-deletes"
		}
		ns[i] = n
	}
	return ns
}

// printable returns a command's text as it is when it prints on one line (a command
// quotes its keys and values already: escaping it again would double every
// backslash), escaped otherwise.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return report.Escape(s)
		}
	}
	return s
}
