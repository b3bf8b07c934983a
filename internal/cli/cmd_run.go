package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/admin/lockrun"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/exitcode"
	"github.com/redlockctl/redlockctl/redlock"
)

// runStdin is the command's standard input under `run` (tests replace it).
var runStdin io.Reader = os.Stdin

// runSignals are passed on to the command's process group (or end the wait for the
// lock). SIGHUP too: were redlockctl to die of it, the command would run on unlocked.
var runSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

const runUsage = "usage: redlockctl run RESOURCE [--ttl 30s] [--wait 0|DURATION] [--owner NAME] [--grace 10s] -- CMD [ARGS...]"

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stderr)
	g := addGlobalFlags(fs)
	ttl := fs.Duration("ttl", 0, "lock TTL, extended every ttl/3 while CMD runs (default: the config's lock.default_ttl)")
	wait := fs.Duration("wait", 0, "keep trying to acquire for up to this long (default: a single attempt)")
	owner := fs.String("owner", "", "owner part of the lock value (default host:pid)")
	grace := fs.Duration("grace", 10*time.Second, "after SIGTERM to CMD's process group, wait this long before SIGKILL")
	conflict := fs.Int("conflict-exit-code", exitcode.NotAcquired, "exit code when the lock is held elsewhere and CMD was not started (as flock -E), 0-255")
	fs.Usage = func() {
		fmt.Fprintln(stderr, runUsage)
		fmt.Fprintln(stderr, "Runs CMD only while RESOURCE is held; stops CMD's process group when the lock is lost.")
		fmt.Fprintf(stderr, "Exit: CMD's code (128+n after signal n); %d held elsewhere or not acquired; %d bad usage or read-only;\n", lockrun.ExitNotAcquired, exitUsage)
		fmt.Fprintf(stderr, "      %d lock lost while CMD ran (CMD was stopped); %d CMD not executable; %d CMD not found.\n", lockrun.ExitLost, lockrun.ExitCannotExecute, lockrun.ExitNotFound)
		fs.PrintDefaults()
	}
	head, command, found := runSplit(args)
	resource, code, ok := runArgs(fs, head, found, stderr)
	if !ok {
		return code
	}
	switch {
	case len(command) == 0 || command[0] == "":
		fmt.Fprintln(stderr, "redlockctl run: empty command after --")
		fmt.Fprintln(stderr, runUsage)
		return exitUsage
	case *conflict < 0 || *conflict > 255:
		fmt.Fprintf(stderr, "redlockctl run: --conflict-exit-code %d: want 0-255\n", *conflict)
		return exitUsage
	case *ttl < 0 || *wait < 0 || *grace < 0:
		fmt.Fprintln(stderr, "redlockctl run: --ttl, --wait and --grace must not be negative")
		fmt.Fprintln(stderr, runUsage)
		return exitUsage
	}
	cfg, pools, code, ok := adminLoad(g, "run", stderr)
	if !ok {
		return code
	}
	defer closePools(pools)
	if admin.New(cfg, nil, pools).ReadOnly() {
		return adminReadOnly(stderr, "run", resource)
	}
	if !adminTTL(cfg, ttl, "run", stderr) {
		return exitUsage
	}

	if err := admin.CheckAudit(cfg); err != nil { // before anything is sent
		fmt.Fprintf(stderr, "redlockctl run: refused: %v\n", err)
		return exitUsage
	}
	auditPath, _ := admin.AuditPath(cfg)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, runSignals...)
	defer signal.Stop(sigs)
	operator := admin.Operator()
	var auditErr error
	res := lockrun.Run(context.Background(), pools, cfg.LockOptions(), lockrun.Job{
		Resource:    resource,
		TTL:         *ttl,
		Wait:        *wait,
		Grace:       *grace,
		Owner:       *owner,
		Args:        command,
		Unset:       cfg.SecretEnv(), // the masters' passwords are none of CMD's business
		Stdin:       runStdin,
		Stdout:      stdout,
		Stderr:      stderr,
		Signals:     sigs,
		ReadTimeout: cfg.Inspect.Timeout,
		NewClient:   func(o ...redlock.Option) (*redlock.Client, error) { return cfg.Client(pools, o...) },
		Event: func(e lockrun.Event) {
			if err := admin.AppendAudit(auditPath, runAudit(cfg, operator, e)); err != nil && auditErr == nil {
				auditErr = err
				warn(stderr, []string{cfg.Scrub(err.Error())})
			}
		},
	})
	if res.Err != nil {
		msg := res.Err.Error()
		switch {
		case res.Code == lockrun.ExitLost:
			msg = fmt.Sprintf("lock %q lost while the command ran; the command was stopped: %v", resource, res.Err)
		case errors.Is(res.Err, redlock.ErrInvalidResource), res.Code == exitUsage:
			msg = fmt.Sprintf("%v\n%s", res.Err, runUsage)
		}
		fmt.Fprintf(stderr, "redlockctl run: %s\n", cfg.Scrub(msg))
	}
	var held *lockrun.HeldError
	if res.Code == lockrun.ExitNotAcquired && errors.As(res.Err, &held) && held.Answered >= held.Masters/2+1 {
		return *conflict // held elsewhere: a skip, not a failure (fewer than a quorum answering stays 1)
	}
	return res.Code
}

// runSplit cuts args at the first "--": what comes before holds RESOURCE and the flags,
// what follows is the command.
func runSplit(args []string) (head, command []string, found bool) {
	i := slices.Index(args, "--")
	if i < 0 {
		return args, nil, false
	}
	return args[:i], args[i+1:], true
}

// runArgs parses the flags (before or after RESOURCE) and returns the one resource;
// found says whether the command line had the "--" that starts the command.
func runArgs(fs *flag.FlagSet, args []string, found bool, stderr io.Writer) (string, int, bool) {
	pos, err := adminParse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return "", exitOK, false
	}
	if err != nil {
		return "", exitUsage, false // the flag package has printed the error and usage
	}
	switch {
	case !found:
		fmt.Fprintln(stderr, "redlockctl run: missing -- before the command")
		fmt.Fprintln(stderr, runUsage)
		return "", exitUsage, false
	case len(pos) == 0 || pos[0] == "":
		fmt.Fprintln(stderr, "redlockctl run: missing RESOURCE")
		fmt.Fprintln(stderr, runUsage)
		return "", exitUsage, false
	case len(pos) > 1:
		fmt.Fprintf(stderr, "redlockctl run: one RESOURCE expected before --, got %d: %s\n", len(pos), strings.Join(pos, " "))
		fmt.Fprintln(stderr, runUsage)
		return "", exitUsage, false
	}
	return pos[0], exitOK, true
}

// runAudit turns a run's event into an audit line; its per-master outcomes are those of
// lockrun.Event.Nodes: for run-acquire "ok" where the value is stored, for run-release
// and run-lost "ok" where it is gone.
func runAudit(cfg *config.Config, operator string, e lockrun.Event) admin.ActionResult {
	r := admin.ActionResult{
		Time: e.Time, Operator: operator, Action: e.Action, Resource: e.Resource,
		Value: e.Value, Token: e.Token, Validity: e.Validity, Quorum: e.Quorum,
		Nodes: []admin.NodeOutcome{},
	}
	if e.Err != nil {
		r.Error = cfg.Scrub(e.Err.Error())
	}
	if e.Action != lockrun.Acquired {
		code := e.ExitCode
		r.RunExit = &code
	}
	for _, n := range e.Nodes {
		name := fmt.Sprintf("m%d", n.Master+1)
		if n.Master >= 0 && n.Master < len(cfg.Masters) {
			name = cfg.Masters[n.Master].Name
		}
		no := admin.NodeOutcome{Master: name, Outcome: n.Outcome.String()}
		if n.Err != nil {
			no.Error = cfg.Scrub(n.Err.Error())
		}
		r.Nodes = append(r.Nodes, no)
		switch {
		case n.Outcome == redlock.OK:
			r.Done++
			r.Up++
		case n.Outcome == redlock.Taken && e.Action != lockrun.Acquired:
			r.Done++ // our value is gone there too
			r.Up++
		case n.Outcome == redlock.Taken, n.Outcome == redlock.Absent, n.Outcome == redlock.Refused,
			errors.Is(n.Err, lockrun.ErrStillThere):
			r.Up++
		}
	}
	return r
}
