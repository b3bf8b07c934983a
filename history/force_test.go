package history_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

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
	// Once as the log is, then after each way of rotating it: renamed away (the
	// force-release's intent creates the next file), renamed away and created
	// anew empty, truncated in place. The feed follows the path and the recorder
	// reads the file there, so each force-release is joined to its own line.
	rotations := []struct {
		name   string
		rotate func(t *testing.T)
	}{
		{"as is", func(*testing.T) {}},
		{"renamed away", func(t *testing.T) {
			if err := os.Rename(audit, audit+".1"); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed away and created", func(t *testing.T) {
			if err := os.Rename(audit, audit+".2"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(audit, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T) {
			if err := os.Truncate(audit, 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, rot := range rotations {
		resource := fmt.Sprintf("stuck%d", i)
		rot.rotate(t)
		time.Sleep(300 * time.Millisecond) // the feed has looked at the path since
		forceRelease(t, cfg, client, pools, s, resource, rot.name)
	}
}

// forceRelease acquires resource, force-releases it through the plan as every
// force-release, and checks the lifecycle is recorded force-released with its intent
// line, and one force-release mark carries that line.
func forceRelease(t *testing.T, cfg *config.Config, client *redlock.Client, pools []*redis.Pool, s *history.Store, resource, rotation string) {
	t.Helper()
	l, err := client.Acquire(context.Background(), resource, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the feed has seen it, and read its value
	// Through the plan, as every force-release: observed, planned, carried out.
	snap, row := admin.Observe(context.Background(), cfg, pools, resource)
	plan := admin.NewForcePlan(cfg.Quorum(), snap, row, false)
	if plan.Err != nil {
		t.Fatalf("%s: force plan for %q (%s): %v", rotation, resource, row.State, plan.Err)
	}
	if _, err := admin.New(cfg, client, pools).ForceRelease(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	var got history.Lifecycle
	for end := time.Now().Add(10 * time.Second); got.Value == ""; time.Sleep(100 * time.Millisecond) {
		r, err := s.Lifecycles(history.Filter{Select: history.Select{Resources: []string{resource}}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range r.Lifecycles {
			if x.Value == l.Value() && x.End != history.Held {
				got = x
			}
		}
		if time.Now().After(end) {
			t.Fatalf("%s: the force-released lifecycle was not recorded within 10 s: %+v", rotation, r.Lifecycles)
		}
	}
	if got.End != history.ForceReleased || !strings.Contains(string(got.Audit), `"phase":"intent"`) || !strings.Contains(string(got.Audit), `"resource":"`+resource+`"`) {
		t.Fatalf("%s: recorded %+v (audit %s): want force-released with its audit intent line", rotation, got, got.Audit)
	}
	marks, err := s.Marks(time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range marks {
		if m.Kind == history.MarkForceRelease && m.Resource == resource && m.Text == string(got.Audit) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%s: %d force-release marks of %s in %+v, want 1", rotation, n, resource, marks)
	}
}
