package admin

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/internal/exitcode"
)

// Output is an action's result with the config it ran under, as the admin commands'
// -o formats write it (it is a report.Action): the JSON formats take the result's own
// JSON, the text names each master's address.
type Output struct {
	ActionResult
	Config *config.Config
}

var _ report.Action = Output{}

// WriteText writes the result for a person: a summary, the value, validity and token,
// and one line per master with its address and outcome. The action's error goes to
// notes where the lines do not say it.
func (o Output) WriteText(w, notes io.Writer) error {
	r, cfg := o.ActionResult, o.Config
	ew := &errWriter{w: w}
	verb := map[string][2]string{
		ActionAcquire:         {"acquired", "not acquired"},
		ActionExtend:          {"extended", "not extended"},
		ActionRelease:         {"released", "not released"},
		ActionForceRelease:    {"force-released", "not force-released"},
		ActionForceReleaseAny: {"deleted (any value)", "not deleted"},
	}[r.Action]
	code := r.ExitCode()
	head := verb[0]
	if code == exitcode.Failure {
		head = verb[1]
	}
	// Masters that said ok to a failed acquisition but carry an error were not counted
	// (the restart guard: the caller explains it).
	notCounted := 0
	for _, n := range r.Nodes {
		if code == exitcode.Failure && r.Action == ActionAcquire && n.Outcome == "ok" && n.Error != "" {
			notCounted++
		}
	}
	if code == exitcode.Failure && notCounted > 0 {
		ew.printf("%s %q: quorum %d not reached (%d/%d masters said ok, %d of them not counted: restarted recently)", head, r.Resource, r.Quorum, r.Done, len(r.Nodes), notCounted)
	} else if code == exitcode.Failure {
		// Not done: a count of "done" would read as where the lock is, and a failed
		// acquire was released again where it had landed.
		ew.printf("%s %q: quorum %d not reached (%d/%d masters said ok, %d answered)", head, r.Resource, r.Quorum, r.Done, len(r.Nodes), r.Up)
	} else if u := r.Untouched(); u > 0 {
		ew.printf("%s %q: done on %d/%d of its own masters (a single-instance lock: %d other masters untouched, nothing sent there)", head, r.Resource, r.Settled()-u, len(r.Nodes)-u, u)
	} else if settled := r.Settled(); settled != r.Done {
		// A release is done where the value is gone, deleted now or gone already.
		ew.printf("%s %q: done on %d/%d masters (%d deleted, %d already gone; quorum %d, %d answered)", head, r.Resource, settled, len(r.Nodes), r.Done, settled-r.Done, r.Quorum, r.Up)
	} else {
		ew.printf("%s %q: done on %d/%d masters (quorum %d, %d answered)", head, r.Resource, r.Done, len(r.Nodes), r.Quorum, r.Up)
	}
	if code == exitcode.Findings {
		ew.printf(": not on every master")
	}
	if code == ExitUnknown {
		ew.printf(": outcome UNKNOWN where masters did not reply (the command may still apply there)")
	}
	ew.printf("\n")
	if r.Value != "" {
		ew.printf("  value     %s\n", strconv.Quote(r.Value))
	}
	if r.Validity > 0 {
		ew.printf("  validity  %v\n", r.Validity.Round(time.Millisecond))
	}
	if r.Token != 0 {
		ew.printf("  token     %d\n", r.Token)
	}
	width := nameWidth(cfg)
	for i, n := range r.Nodes {
		addr := ""
		if i < len(cfg.Masters) {
			addr = cfg.Masters[i].Addr
			switch cfg.Masters[i].Kind() {
			case config.KindSentinel:
				addr = "sentinel " + cfg.Masters[i].MasterName
			case config.KindCluster:
				addr = "cluster"
			}
		}
		line := fmt.Sprintf("  %-*s  %-21s  %s", width, n.Master, addr, n.Outcome)
		if gloss := outcomeGloss(r.Action, n.Outcome, code == exitcode.Failure); gloss != "" {
			line += " (" + gloss + ")"
		}
		if n.Error != "" && (n.Outcome != "ok" || notCounted > 0) {
			if n.ErrorKind != errkind.None {
				line += "  " + errkind.Describe(n.ErrorKind, n.Error) + " (" + n.ErrorKind.Hint() + ")"
			} else {
				line += "  " + n.Error
			}
		}
		ew.printf("%s\n", line)
	}
	if r.Error != "" && code == exitcode.Failure && notCounted == 0 {
		fmt.Fprintf(notes, "redlockctl %s: %s\n", r.Action, r.Error)
	}
	return ew.err
}

// errWriter keeps the first error of its writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// outcomeGloss explains an outcome in the words of the action.
func outcomeGloss(action, outcome string, failed bool) string {
	switch outcome {
	case OutcomeUnknown:
		return "sent, no reply: may still apply; look before retrying"
	case "ok":
		if action == ActionAcquire && failed {
			return "set, then released again: no quorum"
		}
	case "taken":
		if action == ActionAcquire {
			return "held by another value"
		}
		return "another value is there: left alone"
	case "absent":
		if action == ActionForceReleaseAny {
			return "no key"
		}
		return "value not there"
	case "not-sent":
		return "nothing was sent"
	}
	return ""
}

// nameWidth is the width of the master-name column: the longest name, at least 2.
func nameWidth(cfg *config.Config) int {
	w := 2
	for _, m := range cfg.Masters {
		if len(m.Name) > w {
			w = len(m.Name)
		}
	}
	return w
}
