package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/admin"
	"github.com/redlockctl/redlockctl/inspect/config"
	"github.com/redlockctl/redlockctl/redlock"
)

// adminStdin is where release --force reads its confirmation (tests replace it).
var adminStdin io.Reader = os.Stdin

// adminSignals stop `acquire --hold` (and cancel a pending acquire).
var adminSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// adminActionTimeout bounds one extend or release round trip to every master.
const adminActionTimeout = 5 * time.Second

func runAcquire(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acquire", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g := addGlobalFlags(fs)
	ttl := fs.Duration("ttl", 0, "lock TTL (default: the config's lock.default_ttl)")
	wait := fs.Duration("wait", 0, "keep retrying for up to this long (default: a single attempt)")
	hold := fs.Bool("hold", false, "keep the lock alive (extend every ttl/3) until SIGINT/SIGTERM, then release it")
	owner := fs.String("owner", "", "owner part of the lock value (default host:pid)")
	out := fs.String("o", "table", "output: table or json")
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
	if errors.Is(err, admin.ErrReadOnly) {
		return adminReadOnly(stderr, "acquire", resource)
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
	fs := flag.NewFlagSet("extend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g := addGlobalFlags(fs)
	value := fs.String("value", "", "the lock value to extend (required; redlockctl dump shows it)")
	ttl := fs.Duration("ttl", 0, "new TTL from now (default: the config's lock.default_ttl)")
	out := fs.String("o", "table", "output: table or json")
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
	if errors.Is(err, admin.ErrReadOnly) {
		return adminReadOnly(stderr, "extend", resource)
	}
	adminReport(stdout, stderr, *out, cfg, res)
	return res.ExitCode()
}

func runRelease(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g := addGlobalFlags(fs)
	value := fs.String("value", "", "release only where the lock holds this value (compare-and-delete)")
	force := fs.Bool("force", false, "release the value a quorum of masters holds now (observed first, confirmed)")
	anyValue := fs.Bool("any-value", false, "with --force: delete whatever each master holds for RESOURCE")
	yes := fs.Bool("yes", false, "with --force: do not ask for confirmation")
	out := fs.String("o", "table", "output: table or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: redlockctl release RESOURCE --value V [-o table|json]")
		fmt.Fprintln(stderr, "       redlockctl release RESOURCE --force [--any-value] [--yes] [-o table|json]")
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
	if !*force {
		ctx, cancel := context.WithTimeout(context.Background(), adminActionTimeout)
		defer cancel()
		res, err := acts.Release(ctx, resource, *value)
		if errors.Is(err, admin.ErrReadOnly) {
			return adminReadOnly(stderr, "release", resource)
		}
		adminReport(stdout, stderr, *out, cfg, res)
		if res.Done == 0 && err == nil {
			fmt.Fprintf(stderr, "redlockctl release: no master holds that value for %q: nothing deleted\n", resource)
		}
		return res.ExitCode()
	}

	// --force: observe, show the plan, confirm, then act.
	octx, ocancel := context.WithTimeout(context.Background(), adminActionTimeout)
	snap, row := admin.Observe(octx, cfg, pools, resource)
	ocancel()
	plan, err := adminPlan(cfg, snap, row, *anyValue)
	adminWritePlan(stderr, cfg, snap, row, plan, err == nil)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl release: %v\n", err)
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
	var res admin.ActionResult
	if *anyValue {
		res, err = acts.ForceReleaseAny(ctx, resource)
	} else {
		res, err = acts.ForceRelease(ctx, resource, plan.value)
	}
	if errors.Is(err, admin.ErrReadOnly) {
		return adminReadOnly(stderr, "release", resource)
	}
	adminReport(stdout, stderr, *out, cfg, res)
	return res.ExitCode()
}

// forcePlan is what release --force is about to do.
type forcePlan struct {
	value string   // the quorum value (empty with --any-value)
	steps []string // per master, in config order: what will happen there
}

// adminPlan decides what release --force deletes on which master, from one observation.
func adminPlan(cfg *config.Config, snap *inspect.Snapshot, row inspect.Resource, anyValue bool) (forcePlan, error) {
	var p forcePlan
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
			p.steps[i] = "unknown (did not answer): the delete will be tried"
		case n.Type != "" && n.Type != "string" && n.Type != "none":
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
	}
	fmt.Fprintf(w, "force-release %q (key %q, state %s, quorum %d): %s\n", row.Resource, row.Key, row.State, cfg.Quorum(), what)
	width := adminNameWidth(cfg)
	for i, s := range p.steps {
		fmt.Fprintf(w, "  %-*s  %-21s  %s\n", width, snap.Masters[i].Name, snap.Masters[i].Addr, s)
	}
}

// adminArgs parses flags (before or after RESOURCE) and returns the one resource.
func adminArgs(fs *flag.FlagSet, args []string, stderr io.Writer, out *string) (string, int, bool) {
	pos, err := adminParse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return "", exitOK, false
	}
	if err != nil {
		return "", exitUsage, false // the flag package has printed the error and usage
	}
	name := fs.Name()
	switch {
	case len(pos) == 0:
		fmt.Fprintf(stderr, "redlockctl %s: missing RESOURCE\n", name)
		fs.Usage()
		return "", exitUsage, false
	case len(pos) > 1:
		fmt.Fprintf(stderr, "redlockctl %s: one RESOURCE expected, got %d: %s\n", name, len(pos), strings.Join(pos, " "))
		return "", exitUsage, false
	case pos[0] == "":
		fmt.Fprintf(stderr, "redlockctl %s: empty RESOURCE\n", name)
		return "", exitUsage, false
	}
	if *out != "table" && *out != "json" {
		fmt.Fprintf(stderr, "redlockctl %s: -o %q: want table or json\n", name, *out)
		return "", exitUsage, false
	}
	return pos[0], exitOK, true
}

// adminParse parses fs from args, allowing flags after positional arguments; "--"
// makes everything after it positional.
func adminParse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func adminLoad(g *globalFlags, name string, stderr io.Writer) (*config.Config, []*redis.Pool, int, bool) {
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	}
	for _, w := range g.warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return cfg, pools, exitOK, true
}

func adminNew(cfg *config.Config, pools []*redis.Pool, opts []redlock.Option, name string, stderr io.Writer) (*admin.Actions, *redlock.Client, int, bool) {
	client, err := redlock.New(pools, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	}
	acts := admin.New(cfg, client, pools)
	return acts, client, exitOK, true
}

func adminReadOnly(stderr io.Writer, name, resource string) int {
	fmt.Fprintf(stderr, "redlockctl %s: refused: read-only (--read-only or read_only = true in the config): nothing was sent for %q\n", name, resource)
	return exitUsage
}

// adminReport prints an action's result: one JSON object with -o json, else a summary
// and one line per master. Errors and the audit-log state go to stderr.
func adminReport(stdout, stderr io.Writer, out string, cfg *config.Config, r admin.ActionResult) {
	if r.AuditError != "" {
		fmt.Fprintf(stderr, "warning: %s\n", r.AuditError)
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
	if code == exitFailure {
		// Not done: a count of "done" would read as where the lock is, and a failed
		// acquire was released again where it had landed.
		fmt.Fprintf(stdout, "%s %q: quorum %d not reached (%d/%d masters said ok, %d answered)", head, r.Resource, r.Quorum, r.Done, len(r.Nodes), r.Up)
	} else if settled := r.Settled(); settled != r.Done {
		// A release is done where the value is gone, deleted now or gone already.
		fmt.Fprintf(stdout, "%s %q: done on %d/%d masters (%d deleted, %d already gone; quorum %d, %d answered)", head, r.Resource, settled, len(r.Nodes), r.Done, settled-r.Done, r.Quorum, r.Up)
	} else {
		fmt.Fprintf(stdout, "%s %q: done on %d/%d masters (quorum %d, %d answered)", head, r.Resource, r.Done, len(r.Nodes), r.Quorum, r.Up)
	}
	if code == exitFindings {
		fmt.Fprint(stdout, ": not on every master")
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
		}
		line := fmt.Sprintf("  %-*s  %-21s  %s", width, n.Master, addr, n.Outcome)
		if gloss := adminGloss(r.Action, n.Outcome, code == exitFailure); gloss != "" {
			line += " (" + gloss + ")"
		}
		if n.Error != "" && n.Outcome != "ok" {
			line += "  " + n.Error
		}
		fmt.Fprintln(stdout, line)
	}
	if r.Error != "" && code == exitFailure {
		fmt.Fprintf(stderr, "redlockctl %s: %s\n", r.Action, r.Error)
	}
}

// adminGloss explains an outcome in the words of the action.
func adminGloss(action, outcome string, failed bool) string {
	switch outcome {
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
