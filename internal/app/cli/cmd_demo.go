package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/app/demo"
	"github.com/redlockctl/redlockctl/internal/config"
)

// demoOptions are the flags of demo.
type demoOptions struct {
	noUI, readOnly bool
	count          int
	duration       time.Duration
	seed           uint64
	audit          string
	auditSet       bool // --audit-log was given
	embedded       bool
}

// demoEmbeddedNotice is what the demo says when it runs embedded masters for want of
// redis-server: one line, what is missing and how to get it.
const demoEmbeddedNotice = "no redis-server installed: embedded masters, without CLIENT TRACKING, so the LIVE column, activity pane and events follow polls only; install redis-server (apt install redis-server, brew install redis) to see locks live"

func newDemoCmd(e *env) *cobra.Command {
	o := &demoOptions{}
	c := &cobra.Command{
		Use:     "demo",
		Short:   "Open the console on demo masters with simulated clients (nothing to install)",
		Long:    "Start Redis masters on loopback (five by default) with simulated clients that take, extend, release, overrun and contend for locks, and open the console on them. Where redis-server is installed the masters are redis-server processes (without persistence, in a private directory removed at the end), so that the live feed shows every lifecycle as it happens; otherwise they are embedded in the binary, and the live feed can only poll.",
		Example: "  redlockctl demo\n  redlockctl demo --no-ui --duration 10s",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.auditSet = cmd.Flags().Changed("audit-log")
			*e.code = runDemo(e, o)
			return nil
		},
	}
	fs := c.Flags()
	fs.BoolVar(&o.noUI, "no-ui", false, "print a dump table per poll instead of opening the console")
	fs.BoolVar(&o.embedded, "embedded", false, "run embedded masters (no CLIENT TRACKING: no live feed) even where redis-server is installed")
	fs.IntVar(&o.count, "masters-count", 5, fmt.Sprintf("number of embedded masters (1..%d)", demo.MaxMasters))
	fs.DurationVar(&o.duration, "duration", 0, "with --no-ui: stop after this long (default: until interrupted)")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed for the simulated clients (default: random)")
	fs.StringVar(&o.audit, "audit-log", "", "audit log for actions taken in the demo (\"\" for none; default: demo-audit.log in redlockctl's state directory, or in a private directory made for the run)")
	fs.Lookup("audit-log").DefValue = "$XDG_STATE_HOME/redlockctl/demo-audit.log"
	return c
}

// demoAudit is the demo's default audit log: demo-audit.log beside the default audit
// log, in the user's state directory (made 0700), or, when there is none, in a private
// directory made for the run (never a fixed name in a shared directory, where a link
// planted by another user would be followed). done removes what was made for the run.
func demoAudit() (path string, done func(), err error) {
	if def := config.DefaultAuditLog(); def != "" {
		dir := filepath.Dir(def)
		if err := os.MkdirAll(dir, 0o700); err == nil {
			return filepath.Join(dir, "demo-audit.log"), func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", "redlockctl-demo-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "demo-audit.log"), func() { os.RemoveAll(dir) }, nil
}

func runDemo(e *env, o *demoOptions) int {
	stdout, stderr := e.stdout, e.stderr
	noUI, count, duration, seed, audit := &o.noUI, &o.count, &o.duration, &o.seed, &o.audit
	readOnly := &e.g.readOnly
	if *count < 1 || *count > demo.MaxMasters {
		fmt.Fprintf(stderr, "redlockctl demo: --masters-count %d: want 1..%d\n", *count, demo.MaxMasters)
		return exitUsage
	}
	if *duration < 0 {
		fmt.Fprintln(stderr, "redlockctl demo: --duration must not be negative")
		return exitUsage
	}
	if !o.auditSet {
		path, done, err := demoAudit()
		if err != nil {
			fmt.Fprintf(stderr, "redlockctl demo: audit log: %v (--audit-log FILE, or \"\" for none)\n", err)
			return exitFailure
		}
		defer done()
		*audit = path
	}
	// Real redis-servers where one is installed: the live feed needs CLIENT TRACKING,
	// which the embedded masters do not have.
	server, notice := "", ""
	if !o.embedded {
		if bin, err := exec.LookPath("redis-server"); err == nil {
			server = bin
		} else {
			notice = demoEmbeddedNotice
			fmt.Fprintf(stderr, "redlockctl demo: %s\n", notice)
		}
	}
	world, err := demo.Start(demo.Options{Masters: *count, Seed: *seed, RedisServer: server})
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl demo: %v\n", err)
		return exitFailure
	}
	defer world.Stop()
	cfg := world.Config(*audit)
	cfg.ReadOnly = *readOnly
	pools, err := cfg.Pools()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl demo: %v\n", err)
		return exitFailure
	}
	defer closePools(pools)
	if !*noUI && isTerminal(stdout) {
		cfg.History.Dir = "" // the demo's locks are not the operator's history
		return runConsoleOn(cfg, pools, consoleRun{live: true, notice: notice}, stdout, stderr)
	}
	return demoDump(cfg, pools, world, *duration, stdout, stderr)
}

// demoDump prints one dump table per poll until duration passes (0: forever) or the
// process is interrupted.
func demoDump(cfg *config.Config, pools []*redis.Pool, world *demo.World, duration time.Duration, stdout, stderr io.Writer) int {
	kind := "embedded"
	if world.Real() {
		kind = "redis-server"
	}
	fmt.Fprintf(stderr, "redlockctl demo: %d %s masters %v; audit log %s; interrupt to stop\n", len(cfg.Masters), kind, world.Addrs(), demoAuditName(cfg.AuditLog))
	ctx, stop := signal.NotifyContext(context.Background(), adminSignals...)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	poller := poll.NewPoller(cfg, pools)
	defer poller.Close()
	// Give the simulated clients a moment to take their first locks.
	wait := time.NewTimer(300 * time.Millisecond)
	defer wait.Stop()
	tick := time.NewTicker(cfg.Inspect.PollInterval)
	defer tick.Stop()
	select {
	case <-ctx.Done():
		return exitOK
	case <-wait.C:
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, cfg.Inspect.PollInterval+cfg.Inspect.Timeout)
		snap := poller.Poll(pctx)
		cancel()
		if ctx.Err() != nil {
			return exitOK // interrupted mid-poll: the snapshot may be cut short
		}
		if err := report.WriteTable(stdout, snap); err != nil {
			fmt.Fprintf(stderr, "redlockctl demo: %v\n", err)
			return exitFailure
		}
		fmt.Fprintln(stdout)
		select {
		case <-ctx.Done():
			return exitOK
		case <-tick.C:
		}
	}
}

func demoAuditName(p string) string {
	if p == "" {
		return "off"
	}
	return p
}
