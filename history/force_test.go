package history_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/history"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// (An external test: admin's package imports the history's output formats.)

func TestAForceReleaseIsRecordedWithItsAuditLine(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	audit := filepath.Join(t.TempDir(), "audit.log")
	// The feed follows the log from its end: one made after it started is read
	// from the end it had when first seen, which may already hold the intent.
	if err := os.WriteFile(audit, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.FromAddrs(redistest.Addrs(servers))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuditLog, cfg.AuditLogDefault = audit, false
	cfg.Lock.KeyPrefix, cfg.Lock.RestartGuard, cfg.Lock.Retries = "hist:", 0, 0
	cfg.Inspect.Patterns = []string{"hist:*"}

	s, err := history.Open(t.TempDir(), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := history.NewRecorder(s, history.RecorderOptions{AuditLog: audit, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	feed := live.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); feed.Run(ctx, rec.Observe) }()
	go func() { defer wg.Done(); rec.Run(ctx) }()
	defer func() { cancel(); wg.Wait(); s.Close() }()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		up := 0
		for _, st := range feed.Status() {
			if st.Up {
				up++
			}
		}
		if up == len(servers) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the feed is not up within 10 s: %+v", feed.Status())
		}
	}

	pools, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	client, err := redlock.New(pools, cfg.LockOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	l, err := client.Acquire(context.Background(), "stuck", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the feed has seen it, and read its value
	// Through the plan, as every force-release: observed, planned, carried out.
	snap, row := admin.Observe(context.Background(), cfg, pools, "stuck")
	plan := admin.NewForcePlan(cfg.Quorum(), snap, row, false)
	if plan.Err != nil {
		t.Fatalf("force plan for %q (%s): %v", "stuck", row.State, plan.Err)
	}
	if _, err := admin.New(cfg, client, pools).ForceRelease(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	var got history.Lifecycle
	for end := time.Now().Add(10 * time.Second); got.Value == ""; time.Sleep(100 * time.Millisecond) {
		r, err := s.Lifecycles(history.Filter{Select: history.Select{Resources: []string{"stuck"}}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range r.Lifecycles {
			if x.Value == l.Value() && x.End != history.Held {
				got = x
			}
		}
		if time.Now().After(end) {
			t.Fatalf("the force-released lifecycle was not recorded within 10 s: %+v", r.Lifecycles)
		}
	}
	if got.End != history.ForceReleased || !strings.Contains(string(got.Audit), `"phase":"intent"`) || !strings.Contains(string(got.Audit), `"resource":"stuck"`) {
		t.Fatalf("recorded %+v (audit %s): want force-released with its audit intent line", got, got.Audit)
	}
	marks, err := s.Marks(time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range marks {
		if m.Kind == history.MarkForceRelease && m.Resource == "stuck" && m.Text == string(got.Audit) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d force-release marks of stuck in %+v, want 1", n, marks)
	}
}
