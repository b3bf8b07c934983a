package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
)

// adminStdin is where release --force reads its confirmation (tests replace it).
var adminStdin io.Reader = os.Stdin

// adminSignals stop `acquire --hold` (and cancel a pending acquire).
var adminSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// adminActionTimeout bounds one extend or release round trip to every master.
const adminActionTimeout = 5 * time.Second

// acquireOptions are the flags of acquire.
type acquireOptions struct {
	ttl, wait     time.Duration
	hold          bool
	owner, output string
}

func newAcquireCmd(e *env) *cobra.Command {
	o := &acquireOptions{}
	c := &cobra.Command{
		Use:               "acquire RESOURCE",
		Short:             "Acquire a lock through the redlock library",
		Long:              "Take RESOURCE through the redlock library and print its value, validity and token.",
		Example:           "  redlockctl acquire billing:nightly --ttl 5m --owner ops@host\n  redlockctl acquire billing:nightly --ttl 30s --hold",
		Args:              resourceArgs,
		ValidArgsFunction: completeResources(e.g),
		RunE:              e.do(func(args []string) int { return runAcquire(e, o, args[0]) }),
	}
	fs := c.Flags()
	fs.DurationVar(&o.ttl, "ttl", 0, "lock TTL (default: the config's lock.default_ttl)")
	fs.DurationVar(&o.wait, "wait", 0, "keep retrying for up to this long (default: a single attempt)")
	fs.BoolVar(&o.hold, "hold", false, "keep the lock alive (extend every ttl/3) until SIGINT/SIGTERM, then release it")
	fs.StringVar(&o.owner, "owner", "", "owner part of the lock value (default host:pid)")
	adminOutputFlag(c, &o.output, report.CmdAcquire)
	return c
}

func runAcquire(e *env, o *acquireOptions, resource string) int {
	stdout, stderr, g := e.stdout, e.stderr, e.g
	ttl, wait, hold, owner, out := &o.ttl, &o.wait, &o.hold, &o.owner, &o.output
	format, ok := adminOutput(stderr, report.CmdAcquire, *out)
	if !ok {
		return exitUsage
	}
	if *ttl < 0 || *wait < 0 {
		fmt.Fprintln(stderr, "redlockctl acquire: --ttl and --wait must not be negative")
		return exitUsage
	}
	cfg, pools, code, ok := adminLoad(g, "acquire", stderr)
	if !ok {
		return code
	}
	defer closePools(pools)
	if !adminTTL(cfg, ttl, "acquire", stderr) {
		return exitUsage
	}
	opts := cfg.LockOptions()
	if *wait > 0 {
		opts = append(opts, redlock.WithRetries(1<<30)) // bounded by --wait instead
	} else {
		opts = append(opts, redlock.WithRetries(0))
	}
	if *owner != "" {
		opts = append(opts, redlock.WithOwner(*owner))
	}
	acts, client, code, ok := adminNew(cfg, pools, opts, "acquire", stderr)
	if !ok {
		return code
	}
	defer client.Close()

	sigCtx, stop := signal.NotifyContext(context.Background(), adminSignals...)
	defer stop()
	bound := *wait
	if bound == 0 {
		bound = *ttl // one attempt can never usefully take longer than the TTL
	}
	actx, cancel := context.WithTimeout(sigCtx, bound)
	lock, res, err := acts.Acquire(actx, resource, *ttl, "")
	cancel()
	if errors.Is(err, admin.ErrReadOnly) || errors.Is(err, admin.ErrAudit) {
		return adminRefused(stderr, "acquire", resource, err)
	}
	adminReport(stdout, stderr, format, cfg, res)
	if advice := admin.RestartAdvice(cfg, err); advice != "" {
		fmt.Fprintf(stderr, "redlockctl acquire: %s\n", advice)
	}
	code = res.ExitCode()
	if lock == nil || !*hold {
		return code
	}

	every := *ttl / 3
	if format.Text {
		fmt.Fprintf(stderr, "redlockctl acquire: holding %q: extending every %v; interrupt (Ctrl-C) or SIGTERM releases it\n", resource, every.Round(time.Millisecond))
	}
	kaErr := acts.KeepAlive(sigCtx, lock, *ttl)
	if kaErr != nil {
		fmt.Fprintf(stderr, "redlockctl acquire: lock %q lost while holding: %v\n", resource, kaErr)
	} else if format.Text {
		fmt.Fprintf(stderr, "redlockctl acquire: releasing %q\n", resource)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), adminActionTimeout)
	defer rcancel()
	rres, _ := acts.Release(rctx, resource, lock.Value())
	adminReport(stdout, stderr, format, cfg, rres)
	if kaErr != nil {
		return exitFailure
	}
	return rres.ExitCode()
}

// extendOptions are the flags of extend.
type extendOptions struct {
	value, output string
	ttl           time.Duration
}

func newExtendCmd(e *env) *cobra.Command {
	o := &extendOptions{}
	c := &cobra.Command{
		Use:               "extend RESOURCE",
		Short:             "Extend a lock where it still holds the given value",
		Long:              "Extend RESOURCE on every master that still holds --value (never re-creates a missing key).",
		Example:           "  redlockctl extend billing:nightly --value 'worker-7@host#9d6f...' --ttl 5m",
		Args:              resourceArgs,
		ValidArgsFunction: completeResources(e.g),
		RunE:              e.do(func(args []string) int { return runExtend(e, o, args[0]) }),
	}
	fs := c.Flags()
	fs.StringVar(&o.value, "value", "", "the lock value to extend (required; redlockctl dump shows it)")
	fs.DurationVar(&o.ttl, "ttl", 0, "new TTL from now (default: the config's lock.default_ttl)")
	adminOutputFlag(c, &o.output, report.CmdExtend)
	c.RegisterFlagCompletionFunc("value", completeValue(e.g))
	return c
}

func runExtend(e *env, o *extendOptions, resource string) int {
	stdout, stderr, g := e.stdout, e.stderr, e.g
	value, ttl, out := &o.value, &o.ttl, &o.output
	format, ok := adminOutput(stderr, report.CmdExtend, *out)
	if !ok {
		return exitUsage
	}
	if *value == "" {
		fmt.Fprintln(stderr, "redlockctl extend: --value is required (the value the lock holds; see `redlockctl dump`)")
		return exitUsage
	}
	if *ttl < 0 {
		fmt.Fprintln(stderr, "redlockctl extend: --ttl must not be negative")
		return exitUsage
	}
	cfg, pools, code, ok := adminLoad(g, "extend", stderr)
	if !ok {
		return code
	}
	defer closePools(pools)
	if !adminTTL(cfg, ttl, "extend", stderr) {
		return exitUsage
	}
	acts, client, code, ok := adminNew(cfg, pools, cfg.LockOptions(), "extend", stderr)
	if !ok {
		return code
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), adminActionTimeout)
	defer cancel()
	res, err := acts.Extend(ctx, resource, *value, *ttl)
	if errors.Is(err, admin.ErrReadOnly) || errors.Is(err, admin.ErrAudit) {
		return adminRefused(stderr, "extend", resource, err)
	}
	adminReport(stdout, stderr, format, cfg, res)
	return res.ExitCode()
}

// releaseOptions are the flags of release.
type releaseOptions struct {
	value, output               string
	force, anyValue, yes, exact bool
}

func newReleaseCmd(e *env) *cobra.Command {
	o := &releaseOptions{}
	c := &cobra.Command{
		Use:               "release RESOURCE",
		Short:             "Release a lock (owner-checked, or --force after showing the plan)",
		Long:              "Release RESOURCE where it holds --value (compare-and-delete), or with --force the value a quorum holds now: --force shows what it will delete on which master and asks for RESOURCE typed back.",
		Example:           "  redlockctl release billing:nightly --value 'worker-7@host#9d6f...'\n  redlockctl release billing:nightly --force",
		Args:              resourceArgs,
		ValidArgsFunction: completeResources(e.g),
		RunE:              e.do(func(args []string) int { return runRelease(e, o, args[0]) }),
	}
	fs := c.Flags()
	fs.StringVar(&o.value, "value", "", "release only where the lock holds this value (compare-and-delete)")
	fs.BoolVar(&o.force, "force", false, "release the value a quorum of masters holds now (observed first, confirmed)")
	fs.BoolVar(&o.anyValue, "any-value", false, "with --force: also without a quorum value, delete on each master the value observed there (compare-and-delete)")
	fs.BoolVar(&o.yes, "yes", false, "with --force: do not ask for confirmation")
	fs.BoolVar(&o.exact, "key", false, "RESOURCE is the exact Redis key (no lock.key_prefix), e.g. another library's lock")
	adminOutputFlag(c, &o.output, report.CmdRelease)
	c.RegisterFlagCompletionFunc("value", completeValue(e.g))
	return c
}

func runRelease(e *env, o *releaseOptions, resource string) int {
	stdout, stderr, g := e.stdout, e.stderr, e.g
	value, force, anyValue, yes, exactKey, out := &o.value, &o.force, &o.anyValue, &o.yes, &o.exact, &o.output
	format, ok := adminOutput(stderr, report.CmdRelease, *out)
	if !ok {
		return exitUsage
	}
	switch {
	case *force && *value != "":
		fmt.Fprintln(stderr, "redlockctl release: --value and --force exclude each other (--force finds the value itself)")
		return exitUsage
	case !*force && *value == "":
		fmt.Fprintln(stderr, "redlockctl release: give --value V (the lock's value) or --force")
		return exitUsage
	case !*force && (*anyValue || *yes):
		fmt.Fprintln(stderr, "redlockctl release: --any-value and --yes only go with --force")
		return exitUsage
	}
	cfg, pools, code, ok := adminLoad(g, "release", stderr)
	if !ok {
		return code
	}
	defer closePools(pools)
	acts, client, code, ok := adminNew(cfg, pools, cfg.LockOptions(), "release", stderr)
	if !ok {
		return code
	}
	defer client.Close()
	if acts.ReadOnly() {
		return adminReadOnly(stderr, "release", resource)
	}
	key := cfg.Key(resource)
	if *exactKey {
		key = resource
	}
	if !*force {
		ctx, cancel := context.WithTimeout(context.Background(), adminActionTimeout)
		defer cancel()
		var res admin.ActionResult
		var err error
		if l, ok := releaseTarget(ctx, cfg, pools, resource, key, *value, *exactKey); ok {
			if why := l.Release.Unsupported; why != "" {
				fmt.Fprintf(stderr, "redlockctl release: %s lock: redlockctl does not release it: %s\n", l.Label(), why)
				return exitFailure
			}
			res, err = acts.ReleaseLock(ctx, resource, l)
		} else {
			res, err = acts.Release(ctx, resource, *value)
		}
		if errors.Is(err, admin.ErrReadOnly) || errors.Is(err, admin.ErrAudit) {
			return adminRefused(stderr, "release", resource, err)
		}
		adminReport(stdout, stderr, format, cfg, res)
		refused := 0
		for _, n := range res.Nodes {
			if n.Outcome == redlock.Refused.String() {
				refused++
			}
		}
		switch {
		case res.Done == 0 && refused > 0:
			fmt.Fprintf(stderr, "redlockctl release: %d master(s) refused the release of %q (see above): nothing deleted there; check the user's permissions\n", refused, resource)
		case res.Done == 0 && err == nil:
			fmt.Fprintf(stderr, "redlockctl release: no master holds that value for %q: nothing deleted\n", resource)
		}
		return res.ExitCode()
	}

	// --force: observe, show the plan, confirm, then act.
	octx, ocancel := context.WithTimeout(context.Background(), adminActionTimeout)
	snap, row := admin.ObserveKey(octx, cfg, pools, resource, key)
	ocancel()
	plan := admin.NewForcePlan(cfg.Quorum(), snap, row, *anyValue)
	plan.Write(stderr)
	if plan.Err != nil {
		fmt.Fprintf(stderr, "redlockctl release: %v\n", plan.Err)
		return exitFailure
	}
	if !*yes {
		// A name that cannot be typed (a newline, a control character) is shown, and
		// typed back, in its escaped form, as the console's dialog takes it.
		shown := report.Escape(resource)
		if shown != resource {
			fmt.Fprintf(stderr, "Type the resource name to confirm, escaped as shown (%s): ", shown)
		} else {
			fmt.Fprintf(stderr, "Type the resource name (%s) to confirm: ", resource)
		}
		line, _ := bufio.NewReader(adminStdin).ReadString('\n')
		if typed := strings.TrimRight(line, "\r\n"); typed != resource && typed != shown {
			fmt.Fprintln(stderr, "\nredlockctl release: confirmation did not match: nothing deleted (use --yes in scripts)")
			return exitFailure
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminActionTimeout)
	defer cancel()
	// Every force-release follows the observed lock's own release protocol.
	res, err := acts.ForceRelease(ctx, plan)
	if errors.Is(err, admin.ErrReadOnly) || errors.Is(err, admin.ErrAudit) {
		return adminRefused(stderr, "release", resource, err)
	}
	adminReport(stdout, stderr, format, cfg, res)
	return res.ExitCode()
}

// releaseTarget decides whether release --value goes through a library's own release
// step: when the key is named exactly (--key), or when another library's lock holds the
// value (so that its waiters wake: Redisson's unlock message, python-redis-lock's signal
// list, spring's unlock channel). It looks at the key first (read-only). ok is false for
// this project's own locks named by resource, which keep the library's ReleaseValue.
func releaseTarget(ctx context.Context, cfg *config.Config, pools []*redis.Pool, resource, key, value string, exactKey bool) (locks.Lock, bool) {
	octx, cancel := context.WithTimeout(ctx, adminActionTimeout)
	defer cancel()
	snap, row := admin.ObserveKey(octx, cfg, pools, resource, key)
	l, ok := row.Decoded(snap.TakenAt)
	switch {
	case ok && l.Holder == value && l.Library != locks.Redlockctl:
		return l, true
	case exactKey:
		return locks.Lock{Library: row.Library, Holder: value, Release: locks.PlainRelease(key, value)}, true
	}
	return locks.Lock{}, false
}
