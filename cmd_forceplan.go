package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/config"
	"github.com/redlockctl/redlockctl/inspect/errkind"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/report"
)

// forcePlan is what release --force is about to do.
type forcePlan struct {
	value string     // the quorum value (empty with --any-value)
	steps []string   // per master, in config order: what will happen there
	lock  locks.Lock // the observed lock, decoded: its library and release protocol
}

// adminPlan decides what release --force deletes on which master, from one observation.
func adminPlan(cfg *config.Config, snap *inspect.Snapshot, row inspect.Resource, anyValue bool) (forcePlan, error) {
	p := forcePlan{lock: row.Releasable(snap.TakenAt)}
	up := 0
	for _, m := range snap.Masters {
		if m.Up {
			up++
		}
	}
	if !anyValue {
		if row.Value != "" && row.Holders >= cfg.Quorum() {
			p.value = row.Value
		} else {
			why := fmt.Sprintf("state %s", row.State)
			switch {
			case row.State == inspect.StateFree || adminAbsentEverywhere(row):
				why = "no master holds it"
			case row.Value != "":
				why = fmt.Sprintf("state %s: the most common value is on %d master(s), quorum is %d", row.State, row.Holders, cfg.Quorum())
			}
			if up < cfg.Quorum() {
				why += fmt.Sprintf("; only %d of %d masters answered", up, len(cfg.Masters))
			}
			return adminSteps(p, snap, row, anyValue), fmt.Errorf("no value of %q is held by a quorum (%s): nothing deleted; --any-value deletes whatever each master holds", row.Resource, why)
		}
	} else if adminAbsentEverywhere(row) && up == len(cfg.Masters) {
		return adminSteps(p, snap, row, anyValue), fmt.Errorf("%q is not present on any master: nothing to delete", row.Resource)
	}
	if why := p.lock.Release.Unsupported; why != "" {
		return adminSteps(p, snap, row, anyValue), fmt.Errorf("%s lock: redlockctl does not release it: %s", p.lock.Library, why)
	}
	return adminSteps(p, snap, row, anyValue), nil
}

func adminAbsentEverywhere(row inspect.Resource) bool {
	for _, n := range row.Nodes {
		if n.Value != "" || (n.Type != "" && n.Type != "none" && n.Type != "string") {
			return false
		}
	}
	return true
}

func adminSteps(p forcePlan, snap *inspect.Snapshot, row inspect.Resource, anyValue bool) forcePlan {
	p.steps = make([]string, len(snap.Masters))
	for i, m := range snap.Masters {
		var n inspect.Node
		if i < len(row.Nodes) {
			n = row.Nodes[i]
		}
		switch {
		case !m.Up || n.Error != "":
			p.steps[i] = "unknown (" + unanswered(m, n) + "): the delete will be tried"
		case n.Type != "" && n.Type != "string" && n.Type != "none" && !n.Holds():
			if anyValue {
				p.steps[i] = fmt.Sprintf("DELETE %s key (not a lock string)", n.Type)
			} else {
				p.steps[i] = fmt.Sprintf("keep: %s key", n.Type)
			}
		case n.Value == "":
			p.steps[i] = "absent"
		case anyValue || (p.value != "" && n.Value == p.value):
			p.steps[i] = fmt.Sprintf("DELETE %s (%s)", strconv.Quote(n.Value), adminPTTL(n.PTTLMs))
		case p.value == "":
			p.steps[i] = fmt.Sprintf("holds %s (%s)", strconv.Quote(n.Value), adminPTTL(n.PTTLMs))
		default:
			p.steps[i] = fmt.Sprintf("keep: other value %s (%s)", strconv.Quote(n.Value), adminPTTL(n.PTTLMs))
		}
	}
	return p
}

func adminPTTL(ms int64) string {
	switch {
	case ms == -1:
		return "no ttl"
	case ms < 0:
		return "absent"
	}
	return "ttl " + (time.Duration(ms) * time.Millisecond).String()
}

func adminWritePlan(w io.Writer, cfg *config.Config, snap *inspect.Snapshot, row inspect.Resource, p forcePlan, ok bool) {
	what := "delete where the quorum value is still there (compare-and-delete)"
	switch {
	case !ok:
		what = "what each master holds (nothing will be deleted)"
	case p.value == "":
		what = "delete whatever each master holds"
	case p.lock.Release.Protocol != "" && p.lock.Release.Protocol != locks.ProtoCompareAndDelete:
		what = "delete where the quorum holder is still there (" + p.lock.Release.Protocol + ")"
	}
	fmt.Fprintf(w, "force-release %q (key %q, state %s, quorum %d): %s\n", row.Resource, row.Key, row.State, cfg.Quorum(), what)
	width := adminNameWidth(cfg)
	for i, s := range p.steps {
		fmt.Fprintf(w, "  %-*s  %-21s  %s\n", width, snap.Masters[i].Name, snap.Masters[i].Addr, s)
	}
	adminWriteLibrary(w, p.lock, ok)
}

// adminWriteLibrary says whose lock it is, which release protocol runs, and warns when
// the holder puts a deleted key back.
func adminWriteLibrary(w io.Writer, l locks.Lock, ok bool) {
	if l.Library == "" || l.Library == locks.Redlockctl {
		return
	}
	lib := l.Library
	if l.Kind != "" {
		lib += " " + l.Kind
	}
	fmt.Fprintf(w, "  library   %s: %s\n", lib, l.Evidence)
	if ok {
		fmt.Fprintf(w, "  protocol  %s: %s\n", l.Release.Protocol, l.Release.Summary)
	}
	if l.Recreates != "" {
		fmt.Fprintf(w, "  WARNING   %s: stop the holder's process first, or the lock comes back\n", l.Recreates)
	}
}

// unanswered says why a master's part of a plan is unknown: the error's kind, the
// message (already scrubbed) and what to check.
func unanswered(m inspect.Master, n inspect.Node) string {
	k, msg := n.ErrorKind, n.Error
	if msg == "" {
		k, msg = m.ErrorKind, m.Error
	}
	if msg == "" {
		return "did not answer"
	}
	if k == errkind.None {
		k = errkind.OfText(msg)
	}
	return fmt.Sprintf("did not answer, %s: %s; %s", k, report.Escape(msg), k.Hint())
}
