package admin

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/errkind"
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
)

// Step is one master's part of a ForcePlan.
type Step struct {
	Master, Addr string
	Kind         StepKind
	Value        string       // the value observed there ("" when absent or not a string)
	PTTLMs       int64        // its PTTL (-1 no expiry, -2 absent)
	Type         string       // the key's type when it is not a lock string
	Error        string       // StepUnknown: why the master's state is not known (scrubbed)
	ErrorKind    errkind.Kind // StepUnknown: the error's kind
}

// ForcePlan is what a force-release deletes on which master, decided once from one
// observation of the key. The CLI prints it and asks for confirmation; the console
// shows it in its dialog; Actions.ForceRelease carries it out. Both front ends build it
// here, so they refuse and delete alike.
//
// Without AnyValue a plan deletes only the value that a quorum of masters holds, by
// the observed lock's own release protocol, and only where that value is still there;
// a row that no value holds on a quorum (split, partial, free) is refused. With
// AnyValue the key is deleted on every master whatever it holds.
type ForcePlan struct {
	Resource, Key string
	State         string
	Quorum        int
	AnyValue      bool
	Value         string     // the quorum value compared before each delete ("" with AnyValue)
	Lock          locks.Lock // the observed lock, decoded: its library and release protocol
	Steps         []Step     // per master, in config order
	Err           error      // non-nil: the plan is refused and nothing will be sent
}

// NewForcePlan decides what force-releasing row, observed in snap, deletes on each
// master. quorum is the fleet's quorum.
func NewForcePlan(quorum int, snap *inspect.Snapshot, row inspect.Resource, anyValue bool) ForcePlan {
	p := ForcePlan{Resource: row.Resource, Key: row.Key, State: row.State, Quorum: quorum,
		AnyValue: anyValue, Lock: row.Releasable(snap.TakenAt)}
	up := 0
	for _, m := range snap.Masters {
		if m.Up {
			up++
		}
	}
	switch {
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
		p.Err = fmt.Errorf("%s lock: redlockctl does not release it: %s", p.Lock.Library, why)
	}
	p.Steps = p.steps(snap, row)
	return p
}

func absentEverywhere(row inspect.Resource) bool {
	for _, n := range row.Nodes {
		if n.Value != "" || (n.Type != "" && n.Type != "none" && n.Type != "string") {
			return false
		}
	}
	return true
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
		case n.Type != "" && n.Type != "string" && n.Type != "none" && !n.Holds():
			s.Type, s.Kind = n.Type, StepKeep
			if p.AnyValue {
				s.Kind = StepDelete
			}
		case n.Value == "":
			s.Kind = StepAbsent
		case p.AnyValue || (p.Value != "" && n.Value == p.Value):
			s.Kind = StepDelete
		case p.Value == "":
			s.Kind = StepHolds
		default:
			s.Kind = StepKeep
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
		what = "delete whatever each master holds"
	case p.Lock.Release.Protocol != "" && p.Lock.Release.Protocol != locks.ProtoCompareAndDelete:
		what = "delete where the quorum holder is still there (" + p.Lock.Release.Protocol + ")"
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

// text is a step as the CLI prints it.
func (s Step) text() string {
	switch s.Kind {
	case StepUnknown:
		return "unknown (" + s.unanswered() + "): the delete will be tried"
	case StepAbsent:
		return "absent"
	case StepHolds:
		return fmt.Sprintf("holds %s (%s)", strconv.Quote(s.Value), pttlText(s.PTTLMs))
	}
	if s.Type != "" {
		if s.Kind == StepDelete {
			return fmt.Sprintf("DELETE %s key (not a lock string)", s.Type)
		}
		return fmt.Sprintf("keep: %s key", s.Type)
	}
	if s.Kind == StepDelete {
		return fmt.Sprintf("DELETE %s (%s)", strconv.Quote(s.Value), pttlText(s.PTTLMs))
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
	lib := l.Library
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

// ForceRelease carries out p: nothing when p was refused (its Err is returned), else
// the observed lock's own release step on every master, compare-and-delete of p.Value
// or, with p.AnyValue, whatever each master holds.
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
	return a.releaseLock(ctx, action, p.Resource, p.Lock, p.AnyValue, p.planned())
}

// planned is the plan as the audit log's intent line states it: per master, the command
// and the value it deletes there ("none" where nothing is deleted).
func (p ForcePlan) planned() []NodeOutcome {
	ns := make([]NodeOutcome, len(p.Steps))
	for i, s := range p.Steps {
		n := NodeOutcome{Master: s.Master, Outcome: "planned", Command: "none"}
		switch s.Kind {
		case StepDelete:
			n.Command, n.Value = p.Lock.Release.Protocol, s.Value
			if p.AnyValue {
				n.Command += " (any value)"
			}
		case StepUnknown:
			n.Command = p.Lock.Release.Protocol + " (not observed: sent anyway)"
			if p.AnyValue {
				n.Command = p.Lock.Release.Protocol + " (any value; not observed: sent anyway)"
			}
			n.Value = p.Value
		}
		ns[i] = n
	}
	return ns
}
