package ui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The console's force dialog obeys the plan's rule for "any value"
// (admin.AnyValueRefusal), on real masters through the real admin.Actions: a lock
// every master holds with one value gets no any-value choice (tab changes nothing,
// and the plan stays the quorum one); once a master holds another value, any value is
// offered and, chosen and confirmed, deletes each master's observed value.
func TestForceDialogObeysAnyValueRuleOnRealMasters(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	cfg, _, err := config.FromAddrs(redistest.Addrs(servers))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuditLog, cfg.AuditLogDefault = filepath.Join(t.TempDir(), "audit.log"), false
	cfg.Lock.NodeTimeout, cfg.Lock.Retries, cfg.Lock.RestartGuard = 200*time.Millisecond, 0, 0
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
	for _, s := range servers {
		if _, err := s.Do("SET", "nightly", "w1#aa", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	h := liveHarness(t, cfg, nil, 120, 40)
	h.m.actions = admin.New(cfg, client, pools)

	h.key("D")
	d, ok := h.m.dialog.(*forceDialog)
	if !ok {
		t.Fatalf("D opened no force dialog:\n%s", h.screen())
	}
	if d.anyAllowed || strings.Contains(h.screen(), "any value") {
		t.Fatalf("any value offered on a row every master holds with one value:\n%s", h.screen())
	}
	h.key("tab")
	if d.anyValue || d.plan.AnyValue || d.plan.Err != nil || d.plan.Value != "w1#aa" {
		t.Fatalf("tab changed the plan: any %v, plan %+v", d.anyValue, d.plan)
	}
	if sc := flat(h.screen()); !strings.Contains(sc, `anyvaluerefusedfor"nightly"(stateheld)`) || !strings.Contains(sc, `holdsitsvalue"w1#aa"ornothing,sothereisnoothervaluetodelete`) {
		t.Errorf("tab does not say why any value is refused:\n%s", h.screen())
	}
	h.key("esc")

	if _, err := servers[2].Do("SET", "nightly", "w2#bb", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	h.key("r")
	h.key("D")
	d = h.m.dialog.(*forceDialog)
	if !d.anyAllowed || d.anyValue {
		t.Fatalf("with a stray value: offered %v, chosen %v; want offered, not chosen", d.anyAllowed, d.anyValue)
	}
	h.key("tab")
	if !d.anyValue || d.plan.Err != nil || !strings.Contains(h.screen(), "(ANY VALUE)") {
		t.Fatalf("tab did not choose any value: %v\n%s", d.plan.Err, h.screen())
	}
	h.typeText("nightly")
	h.key("enter")
	if _, ok := h.m.dialog.(*resultDialog); !ok {
		t.Fatalf("no result shown:\n%s", h.screen())
	}
	if !strings.Contains(h.screen(), "force-release-any nightly: done on 3/3 masters") {
		t.Errorf("result:\n%s", h.screen())
	}
	for i, s := range servers {
		if v := s.Get(t, "nightly"); v != "" {
			t.Errorf("master %d still holds %q", i, v)
		}
	}
}
