package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock"
)

// adminOutput reports (false) an -o an admin command does not write.
func adminOutput(stderr io.Writer, name, out string) bool {
	if out != "table" && out != "json" {
		fmt.Fprintf(stderr, "redlockctl %s: -o %q: want table or json\n", name, out)
		return false
	}
	return true
}

func adminLoad(g *globalFlags, name string, stderr io.Writer) (*config.Config, []*redis.Pool, int, bool) {
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	}
	warn(stderr, g.warnings)
	return cfg, pools, exitOK, true
}

func adminNew(cfg *config.Config, pools []*redis.Pool, opts []redlock.Option, name string, stderr io.Writer) (*admin.Actions, *redlock.Client, int, bool) {
	client, err := cfg.Client(pools, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	}
	acts := admin.New(cfg, client, pools)
	return acts, client, exitOK, true
}

// adminRefused reports an action refused before anything was sent (read-only, or an
// audit log that cannot be written) and returns the usage exit code.
func adminRefused(stderr io.Writer, name, resource string, err error) int {
	if errors.Is(err, admin.ErrAudit) {
		fmt.Fprintf(stderr, "redlockctl %s: refused: %v\n", name, err)
		return exitUsage
	}
	return adminReadOnly(stderr, name, resource)
}

func adminReadOnly(stderr io.Writer, name, resource string) int {
	fmt.Fprintf(stderr, "redlockctl %s: refused: read-only (--read-only or read_only = true in the config): nothing was sent for %q\n", name, resource)
	return exitUsage
}

// adminReport prints an action's result: one JSON object with -o json, else a summary
// and one line per master. Errors and the audit-log state go to stderr.
func adminReport(stdout, stderr io.Writer, out string, cfg *config.Config, r admin.ActionResult) {
	if r.AuditError != "" {
		warn(stderr, []string{r.AuditError})
	}
	if out == "json" {
		b, err := json.Marshal(r)
		if err != nil {
			fmt.Fprintf(stderr, "redlockctl: %v\n", err)
			return
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return
	}
	verb := map[string][2]string{
		admin.ActionAcquire:         {"acquired", "not acquired"},
		admin.ActionExtend:          {"extended", "not extended"},
		admin.ActionRelease:         {"released", "not released"},
		admin.ActionForceRelease:    {"force-released", "not force-released"},
		admin.ActionForceReleaseAny: {"deleted (any value)", "not deleted"},
	}[r.Action]
	code := r.ExitCode()
	head := verb[0]
	if code == exitFailure {
		head = verb[1]
	}
	// Masters that said ok to a failed acquisition but carry an error were not counted
	// (the restart guard: the caller explains it).
	notCounted := 0
	for _, n := range r.Nodes {
		if code == exitFailure && r.Action == admin.ActionAcquire && n.Outcome == "ok" && n.Error != "" {
			notCounted++
		}
	}
	if code == exitFailure && notCounted > 0 {
		fmt.Fprintf(stdout, "%s %q: quorum %d not reached (%d/%d masters said ok, %d of them not counted: restarted recently)", head, r.Resource, r.Quorum, r.Done, len(r.Nodes), notCounted)
	} else if code == exitFailure {
		// Not done: a count of "done" would read as where the lock is, and a failed
		// acquire was released again where it had landed.
		fmt.Fprintf(stdout, "%s %q: quorum %d not reached (%d/%d masters said ok, %d answered)", head, r.Resource, r.Quorum, r.Done, len(r.Nodes), r.Up)
	} else if u := r.Untouched(); u > 0 {
		fmt.Fprintf(stdout, "%s %q: done on %d/%d of its own masters (a single-instance lock: %d other masters untouched, nothing sent there)", head, r.Resource, r.Settled()-u, len(r.Nodes)-u, u)
	} else if settled := r.Settled(); settled != r.Done {
		// A release is done where the value is gone, deleted now or gone already.
		fmt.Fprintf(stdout, "%s %q: done on %d/%d masters (%d deleted, %d already gone; quorum %d, %d answered)", head, r.Resource, settled, len(r.Nodes), r.Done, settled-r.Done, r.Quorum, r.Up)
	} else {
		fmt.Fprintf(stdout, "%s %q: done on %d/%d masters (quorum %d, %d answered)", head, r.Resource, r.Done, len(r.Nodes), r.Quorum, r.Up)
	}
	if code == exitFindings {
		fmt.Fprint(stdout, ": not on every master")
	}
	if code == admin.ExitUnknown {
		fmt.Fprint(stdout, ": outcome UNKNOWN where masters did not reply (the command may still apply there)")
	}
	fmt.Fprintln(stdout)
	if r.Value != "" {
		fmt.Fprintf(stdout, "  value     %s\n", strconv.Quote(r.Value))
	}
	if r.Validity > 0 {
		fmt.Fprintf(stdout, "  validity  %v\n", r.Validity.Round(time.Millisecond))
	}
	if r.Token != 0 {
		fmt.Fprintf(stdout, "  token     %d\n", r.Token)
	}
	width := adminNameWidth(cfg)
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
		if gloss := adminGloss(r.Action, n.Outcome, code == exitFailure); gloss != "" {
			line += " (" + gloss + ")"
		}
		if n.Error != "" && (n.Outcome != "ok" || notCounted > 0) {
			if n.ErrorKind != errkind.None {
				line += "  " + errkind.Describe(n.ErrorKind, n.Error) + " (" + n.ErrorKind.Hint() + ")"
			} else {
				line += "  " + n.Error
			}
		}
		fmt.Fprintln(stdout, line)
	}
	if r.Error != "" && code == exitFailure && notCounted == 0 {
		fmt.Fprintf(stderr, "redlockctl %s: %s\n", r.Action, r.Error)
	}
}

// adminGloss explains an outcome in the words of the action.
func adminGloss(action, outcome string, failed bool) string {
	switch outcome {
	case admin.OutcomeUnknown:
		return "sent, no reply: may still apply; look before retrying"
	case "ok":
		if action == admin.ActionAcquire && failed {
			return "set, then released again: no quorum"
		}
	case "taken":
		if action == admin.ActionAcquire {
			return "held by another value"
		}
		return "another value is there: left alone"
	case "absent":
		if action == admin.ActionForceReleaseAny {
			return "no key"
		}
		return "value not there"
	case "not-sent":
		return "nothing was sent"
	}
	return ""
}

// adminTTL defaults *ttl to the config's lock.default_ttl and reports (false) a TTL
// that leaves no validity after the drift allowance and the node timeout.
func adminTTL(cfg *config.Config, ttl *time.Duration, name string, stderr io.Writer) bool {
	if *ttl == 0 {
		*ttl = cfg.Lock.DefaultTTL
	}
	if d := cfg.Drift(*ttl); *ttl <= d+cfg.Lock.NodeTimeout {
		fmt.Fprintf(stderr, "redlockctl %s: --ttl %v leaves no validity after the drift allowance %v and node timeout %v\n", name, *ttl, d, cfg.Lock.NodeTimeout)
		return false
	}
	return true
}

func adminNameWidth(cfg *config.Config) int {
	w := 2
	for _, m := range cfg.Masters {
		if len(m.Name) > w {
			w = len(m.Name)
		}
	}
	return w
}
