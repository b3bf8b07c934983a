package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// adminWorld is n real masters, a config over them with an audit log, and an Actions.
type adminWorld struct {
	servers []*redistest.Server
	cfg     *config.Config
	pools   []*redis.Pool
	admin   *Actions
	audit   string
}

func newAdminWorld(t *testing.T, n int, readOnly bool) *adminWorld {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	cfg, _, err := config.FromAddrs(redistest.Addrs(servers))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReadOnly = readOnly
	cfg.AuditLog, cfg.AuditLogDefault = filepath.Join(t.TempDir(), "audit.log"), false
	cfg.Lock.NodeTimeout = 200 * time.Millisecond
	cfg.Lock.Retries = 0
	cfg.Lock.RestartGuard = 0 // the test servers have just started
	pools, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	client, err := redlock.New(pools, cfg.LockOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		for _, p := range pools {
			p.Close()
		}
	})
	a := New(cfg, client, pools)
	return &adminWorld{servers: servers, cfg: cfg, pools: pools, admin: a, audit: cfg.AuditLog}
}

func adminAuditLines(t *testing.T, path string) []ActionResult {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []ActionResult
	var intent *ActionResult
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r ActionResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		switch r.Phase {
		case PhaseIntent:
			if intent != nil {
				t.Fatalf("two intent lines in a row: %+v, %+v", *intent, r)
			}
			intent = &r
			continue
		case PhaseOutcome:
			// Every outcome follows the intent of the same action.
			if intent == nil || intent.Action != r.Action || intent.Resource != r.Resource || len(intent.Nodes) != len(r.Nodes) {
				t.Fatalf("outcome %+v without its intent line (%+v)", r, intent)
			}
			intent = nil
		}
		out = append(out, r)
	}
	return out
}

func TestAdminAcquireExtendReleaseAudited(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	lock, r, err := w.admin.Acquire(ctx, "jobs:nightly", 5*time.Second, "ops-cli")
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if r.Done != 3 || r.Up != 3 || r.Quorum != 2 || r.ExitCode() != 0 {
		t.Fatalf("acquire result: done %d up %d quorum %d exit %d", r.Done, r.Up, r.Quorum, r.ExitCode())
	}
	if !strings.HasPrefix(lock.Value(), "ops-cli#") || r.Value != lock.Value() || r.Validity <= 0 {
		t.Fatalf("value %q / %q, validity %v", lock.Value(), r.Value, r.Validity)
	}
	for i, s := range w.servers {
		if got := s.Get(t, "jobs:nightly"); got != lock.Value() {
			t.Fatalf("master %d holds %q, want %q", i, got, lock.Value())
		}
		if r.Nodes[i].Master != w.cfg.Masters[i].Name || r.Nodes[i].Outcome != "ok" {
			t.Fatalf("node %d: %+v", i, r.Nodes[i])
		}
	}

	// Extend pushes the TTL well past what is left of the first one.
	r, err = w.admin.Extend(ctx, "jobs:nightly", lock.Value(), 60*time.Second)
	if err != nil || r.Done != 3 || r.ExitCode() != 0 {
		t.Fatalf("extend: %v, %+v", err, r)
	}
	if pttl, _ := redis.Int64(w.servers[0].Do("PTTL", "jobs:nightly")); pttl < 30_000 {
		t.Fatalf("PTTL after extend to 60s = %d ms", pttl)
	}
	// Extending a value that is not there does nothing.
	r, _ = w.admin.Extend(ctx, "jobs:nightly", "someone-else#00", 60*time.Second)
	if r.Done != 0 || r.ExitCode() != 1 {
		t.Fatalf("extend of a foreign value: %+v", r)
	}

	r, err = w.admin.Release(ctx, "jobs:nightly", lock.Value())
	if err != nil || r.Done != 3 || r.ExitCode() != 0 {
		t.Fatalf("release: %v, %+v", err, r)
	}
	for i, s := range w.servers {
		if got := s.Get(t, "jobs:nightly"); got != "" {
			t.Fatalf("master %d still holds %q after release", i, got)
		}
	}
	// Releasing again deletes nothing: "not done".
	r, _ = w.admin.Release(ctx, "jobs:nightly", lock.Value())
	if r.Done != 0 || r.ExitCode() != 1 {
		t.Fatalf("second release: %+v", r)
	}

	lines := adminAuditLines(t, w.audit)
	want := []string{"acquire", "extend", "extend", "release", "release"}
	if len(lines) != len(want) {
		t.Fatalf("audit has %d lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if l.Action != want[i] || l.Resource != "jobs:nightly" || !strings.Contains(l.Operator, "@") ||
			l.Time.IsZero() || len(l.Nodes) != 3 || l.Quorum != 2 {
			t.Fatalf("audit line %d: %+v", i, l)
		}
	}
	if lines[0].Value != lock.Value() || lines[3].Done != 3 || lines[4].Done != 0 {
		t.Fatalf("audit lines carry the wrong outcome: %+v", lines)
	}
}

// A split goes only through a plan: without AnyValue it is refused, with AnyValue it
// deletes, on each master, the value the plan showed there, compared first: a value
// that changed since the plan was made survives.
func TestAdminForceReleaseAnyValueThroughThePlan(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	// A split: two different values, none on a quorum.
	w.servers[0].Do("SET", "cron:x", "a#1", "PX", 60000)
	w.servers[1].Do("SET", "cron:x", "b#2", "PX", 60000)
	snap, row := Observe(ctx, w.cfg, w.pools, "cron:x")
	if row.State != inspect.StateSplit || row.Holders != 1 {
		t.Fatalf("observed %s holders %d, want split 1", row.State, row.Holders)
	}
	if AnyValueRefusal(row) != nil {
		t.Fatalf("any value refused on a split: %v", AnyValueRefusal(row))
	}
	if p := NewForcePlan(w.cfg.Quorum(), snap, row, false); p.Err == nil || !strings.Contains(p.Err.Error(), "quorum") {
		t.Fatalf("a split without any value: refusal %v, want one naming the quorum", p.Err)
	}
	plan := NewForcePlan(w.cfg.Quorum(), snap, row, true)
	if plan.Err != nil || plan.Steps[0].Kind != StepDelete || plan.Steps[1].Kind != StepDelete || plan.Steps[2].Kind != StepAbsent {
		t.Fatalf("any-value plan: %v %+v", plan.Err, plan.Steps)
	}
	// Between the plan and its run, the second master's holder changes.
	w.servers[1].Do("SET", "cron:x", "c#3", "PX", 60000)
	r, err := w.admin.ForceRelease(ctx, plan)
	if err != nil || r.Action != ActionForceReleaseAny || r.Done != 1 {
		t.Fatalf("force-release-any: %v %+v", err, r)
	}
	if w.servers[0].Get(t, "cron:x") != "" || w.servers[1].Get(t, "cron:x") != "c#3" {
		t.Fatal("the plan deleted a value it did not show, or left the one it showed")
	}
	if r.Nodes[0].Value != "a#1" || r.Nodes[1].Value != "" {
		t.Fatalf("the outcome does not name the value deleted per master: %+v", r.Nodes)
	}
}

// The rule for any value lives in the plan: a row every master holds with one value
// (or not at all) gives no other value to delete, so an any-value plan of it is
// refused, says why, and its run sends nothing; a stray value on one master, or a key
// that is not a lock, lets it be offered.
func TestAnyValueRefusedWhereOneValueHoldsEverything(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	for _, s := range w.servers[:2] {
		s.Do("SET", "held", "a#1", "PX", 60000)
	}
	snap, row := Observe(ctx, w.cfg, w.pools, "held")
	if row.State != inspect.StateHeld {
		t.Fatalf("observed %s, want held", row.State)
	}
	refusal := AnyValueRefusal(row)
	if refusal == nil || !strings.Contains(refusal.Error(), `"held"`) || !strings.Contains(refusal.Error(), "state held") ||
		!strings.Contains(refusal.Error(), `"a#1"`) || !strings.Contains(refusal.Error(), "no other value") {
		t.Fatalf("refusal %v: want one naming the resource, its state, its value and why", refusal)
	}
	plan := NewForcePlan(w.cfg.Quorum(), snap, row, true)
	if plan.Err == nil || plan.Err.Error() != refusal.Error() {
		t.Fatalf("any-value plan of a held row: %v, want the rule's refusal", plan.Err)
	}
	for i, st := range plan.Steps {
		if st.Kind == StepDelete {
			t.Errorf("the refused plan shows a delete on master %d: %+v", i, st)
		}
	}
	var text strings.Builder
	plan.Write(&text)
	if !strings.Contains(text.String(), "nothing will be deleted") || strings.Contains(text.String(), "DELETE") {
		t.Errorf("the refused plan as printed:\n%s", text.String())
	}
	for _, s := range w.servers {
		if _, err := s.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.admin.ForceRelease(ctx, plan); err == nil || err.Error() != refusal.Error() {
		t.Fatalf("running the refused plan: %v, want its refusal", err)
	}
	for i, s := range w.servers {
		for cmd := range adminCommandStats(t, s) {
			if cmd != "info" && !strings.HasPrefix(cmd, "config") {
				t.Fatalf("master %d received %q for a refused plan", i, cmd)
			}
		}
	}
	if _, err := os.Stat(w.audit); !os.IsNotExist(err) {
		t.Errorf("a refused plan was audited: %v", err)
	}
	// The quorum plan of the same row deletes it.
	if p := NewForcePlan(w.cfg.Quorum(), snap, row, false); p.Err != nil {
		t.Fatalf("the quorum plan of a held row: %v", p.Err)
	}

	// A stray value on the third master: any value is offered.
	w.servers[2].Do("SET", "held", "b#2", "PX", 60000)
	snap, row = Observe(ctx, w.cfg, w.pools, "held")
	if row.State != inspect.StateHeld || AnyValueRefusal(row) != nil {
		t.Fatalf("held with a stray value: state %s, refusal %v", row.State, AnyValueRefusal(row))
	}
	if p := NewForcePlan(w.cfg.Quorum(), snap, row, true); p.Err != nil || p.Steps[2].Kind != StepDelete || p.Steps[2].Value != "b#2" {
		t.Fatalf("any-value plan with a stray value: %v %+v", p.Err, p.Steps)
	}
	// A key that is not a lock on the third master: offered too (and kept).
	w.servers[2].Do("DEL", "held")
	w.servers[2].Do("RPUSH", "held", "x")
	snap, row = Observe(ctx, w.cfg, w.pools, "held")
	if AnyValueRefusal(row) != nil {
		t.Fatalf("a list beside the lock (state %s): refusal %v", row.State, AnyValueRefusal(row))
	}
	if p := NewForcePlan(w.cfg.Quorum(), snap, row, true); p.Err != nil || p.Steps[2].Kind != StepKeep {
		t.Fatalf("any-value plan beside a list: %v %+v", p.Err, p.Steps)
	}
}

func TestAdminMasterDownAndQuorumDown(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	w.servers[2].Kill()
	_, r, err := w.admin.Acquire(ctx, "one-down", 5*time.Second, "")
	if err != nil || r.Done != 2 || r.Up != 2 || r.ExitCode() != 3 {
		t.Fatalf("one master down: %v, done %d up %d exit %d", err, r.Done, r.Up, r.ExitCode())
	}
	if r.Nodes[2].Outcome == "ok" || r.Nodes[2].Error == "" {
		t.Fatalf("the dead master's node: %+v", r.Nodes[2])
	}
	w.servers[1].Kill()
	_, r, err = w.admin.Acquire(ctx, "two-down", 5*time.Second, "")
	if err == nil || r.ExitCode() != 1 || r.Error == "" {
		t.Fatalf("quorum down: %v, %+v", err, r)
	}
	if len(adminAuditLines(t, w.audit)) != 2 {
		t.Fatal("a failed action must be audited too")
	}
}

// adminCommandStats returns the commands a server has processed since CONFIG RESETSTAT.
func adminCommandStats(t *testing.T, s *redistest.Server) map[string]bool {
	t.Helper()
	info, err := redis.String(s.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(info, "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":"); ok && strings.HasPrefix(line, "cmdstat_") {
			seen[name] = true
		}
	}
	return seen
}

func TestAdminReadOnlyGateSendsNothing(t *testing.T) {
	w := newAdminWorld(t, 3, true)
	ctx := context.Background()
	w.servers[0].Do("SET", "held", "x#1", "PX", 60000)
	snap, row := Observe(ctx, w.cfg, w.pools, "held") // a read: before the count starts
	for _, s := range w.servers {
		if _, err := s.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err1 := w.admin.Acquire(ctx, "held", time.Second, "")
	_, _, err2 := w.admin.Acquire(ctx, "held", time.Second, "someone")
	_, err3 := w.admin.Extend(ctx, "held", "x#1", time.Second)
	_, err4 := w.admin.Release(ctx, "held", "x#1")
	_, err5 := w.admin.ForceRelease(ctx, NewForcePlan(w.cfg.Quorum(), snap, row, false))
	_, err6 := w.admin.ForceRelease(ctx, NewForcePlan(w.cfg.Quorum(), snap, row, true))
	err7 := w.admin.KeepAlive(ctx, nil, time.Second)
	_, err8 := w.admin.Renew(ctx, &redlock.Lock{}, time.Second)
	for i, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("call %d: %v, want ErrReadOnly", i+1, err)
		}
	}
	for i, s := range w.servers {
		for cmd := range adminCommandStats(t, s) {
			if cmd != "info" && !strings.HasPrefix(cmd, "config") {
				t.Fatalf("master %d received %q while read-only", i, cmd)
			}
		}
	}
	if w.servers[0].Get(t, "held") != "x#1" {
		t.Fatal("the key changed while read-only")
	}
	if _, err := os.Stat(w.audit); !os.IsNotExist(err) {
		t.Fatalf("a refused action wrote the audit log (%v)", err)
	}
}

func TestAdminKeepAlive(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ttl := 600 * time.Millisecond
	lock, _, err := w.admin.Acquire(context.Background(), "kept", ttl, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.admin.KeepAlive(ctx, lock, ttl) }()
	time.Sleep(3 * ttl)
	if got := w.servers[0].Get(t, "kept"); got != lock.Value() {
		t.Fatalf("after 3 TTLs of keep-alive the key holds %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("keep-alive ended with %v", err)
	}
	// A lock that vanished on the masters is reported lost.
	for _, s := range w.servers {
		s.Do("DEL", "kept")
	}
	err = w.admin.KeepAlive(context.Background(), lock, ttl)
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("keep-alive of a deleted lock: %v, want ErrLockLost", err)
	}
}

func TestAdminRenewIsNotAuditedAndFailsWithoutQuorum(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	lock, _, err := w.admin.Acquire(ctx, "renewed", 2*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.admin.Renew(ctx, lock, 60*time.Second); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if lock.Validity() < 30*time.Second {
		t.Fatalf("validity after renew to 60s: %v", lock.Validity())
	}
	time.Sleep(50 * time.Millisecond) // the third master's PEXPIRE may land after the quorum
	if pttl, _ := redis.Int64(w.servers[2].Do("PTTL", "renewed")); pttl < 30_000 {
		t.Fatalf("PTTL after renew to 60s = %d ms", pttl)
	}
	if n := len(adminAuditLines(t, w.audit)); n != 1 {
		t.Fatalf("%d audit lines after acquire + renew, want 1 (the acquire)", n)
	}
	// The value vanished from two of three masters: one extension is no lock.
	w.servers[0].Do("DEL", "renewed")
	w.servers[1].Do("DEL", "renewed")
	if _, err := w.admin.Renew(ctx, lock, 60*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("renew on 1/3 masters: %v, want ErrLockLost", err)
	}
	// A lock whose local deadline has passed is lost, even if its keys are still there.
	short, _, err := w.admin.Acquire(ctx, "short", 300*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range w.servers {
		s.Do("PEXPIRE", "short", 60000) // the masters would still say yes
	}
	time.Sleep(short.Validity() + 10*time.Millisecond)
	if _, err := w.admin.Renew(ctx, short, 60*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("renew after the local deadline: %v, want ErrLockLost", err)
	}
}

func TestActionResultExitCode(t *testing.T) {
	nodes := func(outs ...string) []NodeOutcome {
		n := make([]NodeOutcome, len(outs))
		for i, o := range outs {
			n[i] = NodeOutcome{Master: fmt.Sprint("m", i), Outcome: o}
		}
		return n
	}
	for _, c := range []struct {
		r    ActionResult
		want int
	}{
		{ActionResult{Action: ActionAcquire, Quorum: 2, Done: 3, Nodes: nodes("ok", "ok", "ok")}, 0},
		{ActionResult{Action: ActionAcquire, Quorum: 2, Done: 2, Nodes: nodes("ok", "ok", "timeout")}, 3},
		{ActionResult{Action: ActionAcquire, Quorum: 2, Done: 1, Error: "x", Nodes: nodes("ok", "taken", "error")}, 1},
		{ActionResult{Action: ActionExtend, Quorum: 3, Done: 3, Nodes: nodes("ok", "ok", "ok", "absent", "absent")}, 3},
		{ActionResult{Action: ActionRelease, Quorum: 2, Done: 2, Nodes: nodes("ok", "ok", "absent")}, 0},
		{ActionResult{Action: ActionRelease, Quorum: 2, Done: 2, Nodes: nodes("ok", "ok", "error")}, 3},
		{ActionResult{Action: ActionRelease, Quorum: 2, Done: 0, Nodes: nodes("absent", "absent", "absent")}, 1},
		{ActionResult{Action: ActionForceReleaseAny, Quorum: 3, Done: 1, Nodes: nodes("ok", "absent", "error", "error", "absent")}, 3},
		{ActionResult{Action: ActionForceRelease, Quorum: 3, Done: 1, Nodes: nodes("ok", "error", "error", "error", "absent")}, 1},
		{ActionResult{}, 1},
	} {
		if got := c.r.ExitCode(); got != c.want {
			t.Errorf("%s %v: exit %d, want %d", c.r.Action, c.r.Nodes, got, c.want)
		}
	}
}

func TestAuditConcurrentAppendsAreWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r := ActionResult{Action: ActionRelease, Resource: fmt.Sprintf("r%d-%d", g, i),
					Value: strings.Repeat("v", 3000), Nodes: []NodeOutcome{{Master: "m1", Outcome: "ok"}}}
				if err := AppendAudit(path, r); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	lines := adminAuditLines(t, path)
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit log mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestAuditLineHasNoPassword(t *testing.T) {
	const pw = "hunter2-very-secret"
	srv := redistest.Start(t, redistest.Options{Password: pw})
	t.Setenv("ADMIN_TEST_PW", pw)
	dir := t.TempDir()
	path := filepath.Join(dir, "c.toml")
	audit := filepath.Join(dir, "audit.log")
	conf := fmt.Sprintf("audit_log = %q\n[[masters]]\nname = \"m1\"\naddr = %q\npassword_env = \"ADMIN_TEST_PW\"\n", audit, srv.Addr)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pools, _ := cfg.Pools()
	client, err := redlock.New(pools, cfg.LockOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	a := New(cfg, client, pools)
	if _, _, err := a.Acquire(context.Background(), "pw-test", time.Second, ""); err != nil {
		t.Fatal(err)
	}
	// An error that quotes the password is scrubbed before it reaches the log.
	r := a.newResult(ActionRelease, "pw-test", "v")
	a.fill(&r, redlock.Result{}, errors.New("auth failed for "+pw))
	a.finish(r)
	b, _ := os.ReadFile(audit)
	if strings.Contains(string(b), pw) || strings.Count(string(b), "\n") != 3 { // acquire's intent and outcome, then this
		t.Fatalf("audit log leaks the password or has the wrong lines:\n%s", b)
	}
}

func TestObserveJudgesStates(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	set := func(i int, key, v string, px int) {
		if px > 0 {
			w.servers[i].Do("SET", key, v, "PX", px)
		} else {
			w.servers[i].Do("SET", key, v)
		}
	}
	a1, b2 := "a#"+strings.Repeat("1", 32), "b#"+strings.Repeat("2", 32) // redlock values: owner a, owner b
	set(0, "held", a1, 60000)
	set(1, "held", a1, 60000)
	set(2, "held", b2, 60000)
	set(0, "partial", a1, 60000)
	set(0, "nottl", a1, 0)
	set(1, "nottl", a1, 0)
	w.servers[0].Do("HSET", "foreign", "f", "1")
	for res, want := range map[string]string{"held": inspect.StateHeld, "partial": inspect.StatePartial, "nottl": inspect.StateNoTTL, "foreign": inspect.StateForeign, "free": inspect.StateFree} {
		snap, row := Observe(ctx, w.cfg, w.pools, res)
		if row.State != want || snap.Summary.MastersUp != 3 || len(row.Nodes) != 3 {
			t.Errorf("%s: state %s (want %s), masters up %d", res, row.State, want, snap.Summary.MastersUp)
		}
	}
	_, row := Observe(ctx, w.cfg, w.pools, "held")
	if row.Value != a1 || row.Holders != 2 || row.Owner != "a" || row.Nodes[2].Value != b2 || !hasAnomaly(&row, inspect.AnomalyStray, w.cfg.Masters[2].Name) {
		t.Fatalf("held row: %+v", row)
	}
	w.servers[1].Pause()
	defer w.servers[1].Resume()
	snap, row := Observe(ctx, w.cfg, w.pools, "held")
	if snap.Masters[1].Up || !row.Uncertain || row.Nodes[1].Error == "" || snap.Summary.MastersUp != 2 {
		t.Fatalf("a paused master must show down: %+v / %+v", snap.Masters[1], row.Nodes[1])
	}
}

func hasAnomaly(r *inspect.Resource, code, master string) bool {
	for _, a := range r.Anomalies {
		if a.Code == code && (master == "" || a.Master == master) {
			return true
		}
	}
	return false
}

// An audit log that cannot be written refuses every audited action before anything is
// sent; the intent line of a force-release names, per master, the command and the
// value it deletes.
func TestAuditIntentFirst(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	for _, s := range w.servers[:2] {
		if _, err := s.Do("SET", "job", "a#1", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	good := w.cfg.AuditLog
	w.cfg.AuditLog = filepath.Join(t.TempDir(), "missing-dir", "audit.log")
	snap, row := Observe(ctx, w.cfg, w.pools, "job")
	plan := NewForcePlan(w.cfg.Quorum(), snap, row, false)
	if _, err := w.servers[0].Do("SET", "split", "a#1", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	if _, err := w.servers[1].Do("SET", "split", "b#2", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	snap, row = Observe(ctx, w.cfg, w.pools, "split")
	anyPlan := NewForcePlan(w.cfg.Quorum(), snap, row, true)
	if anyPlan.Err != nil {
		t.Fatal(anyPlan.Err)
	}
	for name, act := range map[string]func() error{
		"acquire":       func() error { _, _, err := w.admin.Acquire(ctx, "new", time.Second, ""); return err },
		"extend":        func() error { _, err := w.admin.Extend(ctx, "job", "a#1", time.Minute); return err },
		"release":       func() error { _, err := w.admin.Release(ctx, "job", "a#1"); return err },
		"force-release": func() error { _, err := w.admin.ForceRelease(ctx, plan); return err },
		"force-any":     func() error { _, err := w.admin.ForceRelease(ctx, anyPlan); return err },
	} {
		if err := act(); !errors.Is(err, ErrAudit) {
			t.Errorf("%s with an unwritable audit log: %v, want ErrAudit", name, err)
		}
	}
	for i, s := range w.servers {
		got, _ := redis.String(s.Do("GET", "job"))
		pttl, _ := redis.Int64(s.Do("PTTL", "job"))
		newKey, _ := redis.Int(s.Do("EXISTS", "new"))
		if (i < 2 && (got != "a#1" || pttl > 60000)) || newKey != 0 {
			t.Errorf("master %d changed although nothing may be sent: job=%q pttl %d new=%d", i, got, pttl, newKey)
		}
	}
	w.cfg.AuditLog = good
	if _, err := w.admin.ForceRelease(ctx, plan); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var intent, outcome ActionResult
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &intent) != nil || json.Unmarshal([]byte(lines[1]), &outcome) != nil {
		t.Fatalf("audit log:\n%s", b)
	}
	if intent.Phase != PhaseIntent || outcome.Phase != PhaseOutcome || len(intent.Nodes) != 3 ||
		intent.Nodes[0] != (NodeOutcome{Master: "127.0.0.1:" + strings.Split(w.servers[0].Addr, ":")[1], Outcome: "planned", Command: `EVAL compare-and-delete: GET "job", DEL "job" if it holds value="a#1"`, Value: "a#1"}) ||
		intent.Nodes[2].Command != "none" || outcome.Done != 2 {
		t.Errorf("intent %+v\noutcome %+v", intent, outcome)
	}
}

// A master paused during a release never answers in time: its outcome is unknown, not
// failed, because the delete sits in its socket and runs when it resumes (checked).
// With two of three paused, the exit code is ExitUnknown rather than "not done".
func TestReleaseWithoutReplyIsUnknown(t *testing.T) {
	w := newAdminWorld(t, 3, false)
	ctx := context.Background()
	for _, s := range w.servers {
		if _, err := s.Do("SET", "job", "a#1", "PX", 60000); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Do("SET", "job2", "b#2", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	w.servers[2].Pause()
	r, _ := w.admin.Release(ctx, "job", "a#1")
	if r.Nodes[2].Outcome != OutcomeUnknown || r.ExitCode() != 3 {
		t.Errorf("one master paused: %+v, exit %d; want m3 unknown, exit 3", r.Nodes, r.ExitCode())
	}
	w.servers[1].Pause()
	r, _ = w.admin.Release(ctx, "job2", "b#2")
	if r.Nodes[1].Outcome != OutcomeUnknown || r.Nodes[2].Outcome != OutcomeUnknown || r.ExitCode() != ExitUnknown {
		t.Errorf("two masters paused: %+v, exit %d; want unknown twice, exit %d", r.Nodes, r.ExitCode(), ExitUnknown)
	}
	w.servers[1].Resume()
	w.servers[2].Resume()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, _ := redis.Int(w.servers[2].Do("EXISTS", "job", "job2"))
		if n == 0 {
			break // the "unknown" deletes did apply once the master woke
		}
		if time.Now().After(end) {
			t.Fatalf("m3 still holds %d of the keys after resuming", n)
		}
	}
}

// The plan states the exact commands a force-release sends; after it ran, the
// servers' INFO commandstats holds exactly those commands (besides the EVAL carrying
// them and the observation's reads): for a string lock GET and DEL, for a Symfony
// sorted-set lock ZSCORE and ZREM.
func TestForcePlanStatesTheCommandsSent(t *testing.T) {
	w := newAdminWorld(t, 1, false)
	ctx := context.Background()
	s := w.servers[0]
	token := "/6pYeqESk3bVyDvxQ/+6SMhdFuU1Qrl/OTqkfefnkqY="
	exp := time.Now().Add(time.Minute).UnixMilli()
	for _, c := range []struct {
		key   string
		setup [][]any
		want  []string // the write and read commands the script sends, lowercase
	}{
		{"job", [][]any{{"SET", "job", "a#1", "PX", 60000}}, []string{"get", "del"}},
		{"orders", [][]any{{"ZADD", "orders", exp, token, exp, "__write__"}, {"PEXPIREAT", "orders", exp}}, []string{"type", "zscore", "zrem"}},
	} {
		for _, cmd := range c.setup {
			if _, err := s.Do(cmd[0].(string), cmd[1:]...); err != nil {
				t.Fatal(err)
			}
		}
		snap, row := Observe(ctx, w.cfg, w.pools, c.key)
		plan := NewForcePlan(w.cfg.Quorum(), snap, row, false)
		var text strings.Builder
		plan.Write(&text)
		if _, err := s.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.admin.ForceRelease(ctx, plan); err != nil {
			t.Fatalf("%s: %v\n%s", c.key, err, text.String())
		}
		seen := adminCommandStats(t, s)
		// The test's own INFO and RESETSTAT, the client's script loading and its
		// connection check carry no data command.
		for _, k := range []string{"info", "eval", "evalsha", "config|resetstat", "config|get", "script|load"} {
			delete(seen, k)
		}
		var got []string
		for name := range seen {
			got = append(got, name)
		}
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the servers ran %v, want %v", c.key, got, want)
		}
		for _, name := range c.want {
			if !strings.Contains(text.String(), strings.ToUpper(name)+" ") {
				t.Errorf("%s: the plan does not state %s:\n%s", c.key, strings.ToUpper(name), text.String())
			}
		}
		if n, _ := redis.Int(s.Do("EXISTS", c.key)); n != 0 {
			t.Errorf("%s still there", c.key)
		}
	}
}
