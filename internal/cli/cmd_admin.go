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

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
)

// adminStdin is where release --force reads its confirmation (tests replace it).
var adminStdin io.Reader = os.Stdin

// adminSignals stop `acquire --hold` (and cancel a pending acquire).
var adminSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// adminActionTimeout bounds one extend or release round trip to every master.
const adminActionTimeout = 5 * time.Second

func runAcquire(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("acquire", stderr)
	g := addGlobalFlags(fs)
	ttl := fs.Duration("ttl", 0, "lock TTL (default: the config's lock.default_ttl)")
	wait := fs.Duration("wait", 0, "keep retrying for up to this long (default: a single attempt)")
	hold := fs.Bool("hold", false, "keep the lock alive (extend every ttl/3) until SIGINT/SIGTERM, then release it")
	owner := fs.String("owner", "", "owner part of the lock value (default host:pid)")
	out := outputFlag(fs, "table", "output: table or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: redlockctl acquire RESOURCE [--ttl 30s] [--wait 10s] [--hold] [--owner NAME] [-o table|json]")
		fmt.Fprintln(stderr, "Takes RESOURCE through the redlock library and prints its value, validity and token.")
		fmt.Fprintln(stderr, "Exit: 0 acquired on every master, 3 on a quorum only, 1 not acquired, 2 bad usage or read-only.")
		fs.PrintDefaults()
	}
	resource, code, ok := adminArgs(fs, args, stderr, out)
	if !ok {
		return code
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
	adminReport(stdout, stderr, *out, cfg, res)
	code = res.ExitCode()
	if lock == nil || !*hold {
		return code
	}

	every := *ttl / 3
	if *out != "json" {
		fmt.Fprintf(stderr, "holding %q: extending every %v; interrupt (Ctrl-C) or SIGTERM releases it\n", resource, every.Round(time.Millisecond))
	}
	kaErr := acts.KeepAlive(sigCtx, lock, *ttl)
	if kaErr != nil {
		fmt.Fprintf(stderr, "redlockctl acquire: lock %q lost while holding: %v\n", resource, kaErr)
	} else if *out != "json" {
		fmt.Fprintf(stderr, "releasing %q\n", resource)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), adminActionTimeout)
	defer rcancel()
	rres, _ := acts.Release(rctx, resource, lock.Value())
	adminReport(stdout, stderr, *out, cfg, rres)
	if kaErr != nil {
		return exitFailure
	}
	return rres.ExitCode()
}

func runExtend(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("extend", stderr)
	g := addGlobalFlags(fs)
	value := fs.String("value", "", "the lock value to extend (required; redlockctl dump shows it)")
	ttl := fs.Duration("ttl", 0, "new TTL from now (default: the config's lock.default_ttl)")
	out := outputFlag(fs, "table", "output: table or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: redlockctl extend RESOURCE --value V [--ttl 30s] [-o table|json]")
		fmt.Fprintln(stderr, "Extends RESOURCE on every master that still holds V (never re-creates a missing key).")
		fmt.Fprintln(stderr, "Exit: 0 extended on every master, 3 on a quorum only, 1 not extended, 2 bad usage or read-only.")
		fs.PrintDefaults()
	}
	resource, code, ok := adminArgs(fs, args, stderr, out)
	if !ok {
		return code
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
	adminReport(stdout, stderr, *out, cfg, res)
	return res.ExitCode()
}

func runRelease(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("release", stderr)
	g := addGlobalFlags(fs)
	value := fs.String("value", "", "release only where the lock holds this value (compare-and-delete)")
	force := fs.Bool("force", false, "release the value a quorum of masters holds now (observed first, confirmed)")
	anyValue := fs.Bool("any-value", false, "with --force: also without a quorum value, delete on each master the value observed there (compare-and-delete)")
	yes := fs.Bool("yes", false, "with --force: do not ask for confirmation")
	exactKey := fs.Bool("key", false, "RESOURCE is the exact Redis key (no lock.key_prefix), e.g. another library's lock")
	out := outputFlag(fs, "table", "output: table or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: redlockctl release RESOURCE --value V [-o table|json]")
		fmt.Fprintln(stderr, "       redlockctl release RESOURCE --force [--any-value] [--key] [--yes] [-o table|json]")
		fmt.Fprintln(stderr, "--force shows what it will delete on which master and asks for RESOURCE typed back.")
		fmt.Fprintln(stderr, "Exit: 0 released on every master, 3 on a quorum only, 1 not released, 2 bad usage or read-only.")
		fs.PrintDefaults()
	}
	resource, code, ok := adminArgs(fs, args, stderr, out)
	if !ok {
		return code
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
		adminReport(stdout, stderr, *out, cfg, res)
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
		fmt.Fprintf(stderr, "Type the resource name (%s) to confirm: ", resource)
		line, _ := bufio.NewReader(adminStdin).ReadString('\n')
		if strings.TrimRight(line, "\r\n") != resource {
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
	adminReport(stdout, stderr, *out, cfg, res)
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
