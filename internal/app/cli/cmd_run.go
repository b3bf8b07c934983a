package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

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

// runOptions are the flags of run.
type runOptions struct {
	ttl, wait, grace time.Duration
	owner            string
	conflict         int
}

func newRunCmd(e *env) *cobra.Command {
	o := &runOptions{}
	c := &cobra.Command{
		Use:               "run RESOURCE -- CMD [ARG...]",
		Short:             "Run a command only while a lock is held",
		Long:              "Run CMD only while RESOURCE is held: the lock is extended every ttl/3, and CMD's process group is stopped when the lock is lost.",
		Example:           "  redlockctl run billing:nightly --ttl 30s -- ./nightly.sh --full",
		Args:              runArgs,
		ValidArgsFunction: completeResources(e.g),
		RunE: e.do(func(args []string) int {
			return runRun(e, o, args[0], args[1:])
		}),
	}
	fs := c.Flags()
	fs.DurationVar(&o.ttl, "ttl", 0, "lock TTL, extended every ttl/3 while CMD runs (default: the config's lock.default_ttl)")
	fs.DurationVar(&o.wait, "wait", 0, "keep trying to acquire for up to this long (default: a single attempt)")
	fs.StringVar(&o.owner, "owner", "", "owner part of the lock value (default host:pid)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "after SIGTERM to CMD's process group, wait this long before SIGKILL")
	fs.IntVar(&o.conflict, "conflict-exit-code", exitcode.NotAcquired, "exit code when the lock is held elsewhere and CMD was not started (as flock -E), 0-255")
	return c
}

// runArgs checks run's arguments: one RESOURCE, then -- and the command.
func runArgs(c *cobra.Command, args []string) error {
	dash := c.ArgsLenAtDash()
	switch {
	case dash < 0:
		return errors.New("missing -- before the command")
	case dash == 0 || args[0] == "":
		return errors.New("missing RESOURCE")
	case dash > 1:
		return fmt.Errorf("one RESOURCE expected before --, got %d: %s", dash, strings.Join(args[:dash], " "))
	case len(args) == 1 || args[1] == "":
		return errors.New("empty command after --")
	}
	return nil
}

func runRun(e *env, o *runOptions, resource string, command []string) int {
	stdout, stderr, g := e.stdout, e.stderr, e.g
	ttl, wait, owner, grace, conflict := &o.ttl, &o.wait, &o.owner, &o.grace, &o.conflict
	switch {
	case *conflict < 0 || *conflict > 255:
		fmt.Fprintf(stderr, "redlockctl run: --conflict-exit-code %d: want 0-255\n", *conflict)
		return exitUsage
	case *ttl < 0 || *wait < 0 || *grace < 0:
		fmt.Fprintln(stderr, "redlockctl run: --ttl, --wait and --grace must not be negative")
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
			msg = res.Err.Error()
		}
		fmt.Fprintf(stderr, "redlockctl run: %s\n", cfg.Scrub(msg))
		if advice := admin.RestartAdvice(cfg, res.Err); advice != "" {
			fmt.Fprintf(stderr, "redlockctl run: %s\n", advice)
		}
	}
	var held *lockrun.HeldError
	if res.Code == lockrun.ExitNotAcquired && errors.As(res.Err, &held) && held.Answered >= held.Masters/2+1 {
		return *conflict // held elsewhere: a skip, not a failure (fewer than a quorum answering stays 1)
	}
	return res.Code
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
