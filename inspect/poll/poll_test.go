package poll

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

const hex32 = "0123456789abcdef0123456789abcdef"

// testConfig returns a config over servers named m1..mN, with edits applied.
func testConfig(t testing.TB, servers []*redistest.Server, edit func(*config.Config)) *config.Config {
	t.Helper()
	c := config.Default()
	c.Inspect.Timeout = time.Second
	for i, s := range servers {
		c.Masters = append(c.Masters, config.MasterConfig{Name: fmt.Sprintf("m%d", i+1), Addr: s.Addr})
	}
	if edit != nil {
		edit(c)
	}
	return c
}

func newPoller(t testing.TB, c *config.Config) *Poller {
	t.Helper()
	pools, err := c.Pools()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range pools {
			p.Close()
		}
	})
	return NewPoller(c, pools)
}

// do runs a command on each of the given servers, failing the test on error.
func do(t testing.TB, servers []*redistest.Server, cmd string, args ...any) {
	t.Helper()
	for _, s := range servers {
		if _, err := s.Do(cmd, args...); err != nil {
			t.Fatalf("%s %v on %s: %v", cmd, args, s.Addr, err)
		}
	}
}

func row(t testing.TB, s *inspect.Snapshot, resource string) *inspect.Resource {
	t.Helper()
	for i := range s.Resources {
		if s.Resources[i].Resource == resource {
			return &s.Resources[i]
		}
	}
	t.Fatalf("no row %q in snapshot", resource)
	return nil
}

func hasAnomaly(r *inspect.Resource, code, master string) bool {
	for _, a := range r.Anomalies {
		if a.Code == code && (master == "" || a.Master == master) {
			return true
		}
	}
	return false
}

func finding(fs []inspect.Finding, code string) *inspect.Finding {
	for i := range fs {
		if fs[i].Code == code {
			return &fs[i]
		}
	}
	return nil
}

func TestPollScenarios(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 5, redistest.Options{})
	v := func(owner string) string { return owner + "#" + hex32 }
	fenced := v("web-1:42") + "#7"
	do(t, ms[:4], "SET", "held", fenced, "PX", 30000)
	do(t, ms, "SET", "held:fence", 7)
	do(t, ms[:2], "SET", "partial", v("w2"), "PX", 30000)
	do(t, ms[:2], "SET", "split", v("a"), "PX", 30000)
	do(t, ms[2:4], "SET", "split", v("b"), "PX", 30000)
	do(t, ms[:3], "SET", "stray", v("a"), "PX", 30000)
	do(t, ms[3:4], "SET", "stray", v("b"), "PX", 30000)
	do(t, ms[:1], "SET", "nottl", v("c"))
	do(t, ms[:3], "HSET", "foreign", "owner", "1")
	do(t, ms[:5], "SET", "orphan:fence", 3) // a counter without a lock: no row
	do(t, ms[:3], "SET", "opaque", "d2FyZG9uZzEyMw==", "PX", 30000)

	c := testConfig(t, ms, func(c *config.Config) { c.Inspect.Resources = []string{"free", "held"} })
	checkScenarios(t, newPoller(t, c).Poll(context.Background()))

	// Two of five masters down: only verdicts they could change are uncertain.
	ms[3].Kill()
	ms[4].Kill()
	s := newPoller(t, c).Poll(context.Background())
	if s.Summary.MastersUp != 3 || s.Complete {
		t.Fatalf("masters up %d complete %v, want 3 false", s.Summary.MastersUp, s.Complete)
	}
	for _, tt := range []struct {
		res       string
		state     string
		uncertain bool
	}{
		{"held", inspect.StateHeld, false},       // 3 holders left: still a quorum
		{"partial", inspect.StatePartial, true},  // 2 + 2 down could be a quorum
		{"split", inspect.StateSplit, true},      // a on m1, m2 and b on m3: a + 2 down could be a quorum
		{"free", inspect.StateFree, false},       // 0 + 2 down < 3
		{"foreign", inspect.StateForeign, false}, // no value could reach quorum
	} {
		r := row(t, s, tt.res)
		if r.State != tt.state || r.Uncertain != tt.uncertain {
			t.Errorf("2 down: %s is %s uncertain=%v; want %s %v", tt.res, r.State, r.Uncertain, tt.state, tt.uncertain)
		}
		if r.Nodes[3].Error == "" || r.Nodes[4].Error == "" {
			t.Errorf("2 down: %s nodes of down masters carry no error", tt.res)
		}
	}
	if !strings.Contains(s.Masters[3].Error, "connect") || finding(s.Masters[3].Findings, "down") == nil {
		t.Errorf("m4 down: error %q findings %+v", s.Masters[3].Error, s.Masters[3].Findings)
	}
	if inspect.ExitCode(s) != 3 {
		t.Errorf("exit code %d with 2 of 5 down, want 3", inspect.ExitCode(s))
	}
	ms[2].Kill()
	if s = newPoller(t, c).Poll(context.Background()); inspect.ExitCode(s) != 1 {
		t.Errorf("exit code %d with 3 of 5 down, want 1", inspect.ExitCode(s))
	}
}

func TestPollPausedMaster(t *testing.T) { // not parallel: it counts goroutines
	ms := redistest.StartN(t, 3, redistest.Options{})
	do(t, ms, "SET", "job", "w#"+hex32, "PX", 30000)
	c := testConfig(t, ms, func(c *config.Config) { c.Inspect.Timeout = 300 * time.Millisecond })
	p := newPoller(t, c)
	if s := p.Poll(context.Background()); s.Summary.MastersUp != 3 {
		t.Fatalf("before pause: %d up", s.Summary.MastersUp)
	}
	before := runtime.NumGoroutine()
	ms[1].Pause()
	start := time.Now()
	s := p.Poll(context.Background())
	took := time.Since(start)
	ms[1].Resume()
	// On time: the deadline plus grace, with a wide margin for a loaded machine.
	if took > c.Inspect.Timeout+2*time.Second {
		t.Errorf("poll with a paused master took %v", took)
	}
	if s.Masters[1].Up || s.Masters[1].Error == "" || !s.Masters[0].Up || !s.Masters[2].Up {
		t.Errorf("paused m2: masters %+v", s.Masters)
	}
	if r := row(t, s, "job"); r.State != inspect.StateHeld || r.Holders != 2 {
		t.Errorf("job with m2 paused: %s %d/3", r.State, r.Holders)
	}
	// No goroutine outlives the poll for long: the read of m2 ends at its deadline.
	deadline := time.Now().Add(5 * time.Second)
	for (runtime.NumGoroutine() > before || readsInFlight() > 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n, r := runtime.NumGoroutine(), readsInFlight(); n > before || r > 0 {
		t.Errorf("%d goroutines after the poll (%d reading a master), %d before", n, r, before)
	}
	if s := p.Poll(context.Background()); s.Summary.MastersUp != 3 {
		t.Errorf("after resume: %d up (%+v)", s.Summary.MastersUp, s.Masters[1])
	}
}

func checkScenarios(t *testing.T, s *inspect.Snapshot) {
	t.Helper()
	if !s.Complete || s.Summary.MastersUp != 5 || s.Quorum != 3 {
		t.Fatalf("complete=%v up=%d quorum=%d", s.Complete, s.Summary.MastersUp, s.Quorum)
	}
	tests := []struct {
		res     string
		state   string
		holders int
		owner   string
		token   int64
		anomaly string
		master  string
	}{
		{"held", inspect.StateHeld, 4, "web-1:42", 7, "", ""},
		{"partial", inspect.StatePartial, 2, "w2", 0, "", ""},
		{"split", inspect.StateSplit, 2, "a", 0, "", ""},
		{"stray", inspect.StateHeld, 3, "a", 0, inspect.AnomalyStray, "m4"},
		{"nottl", inspect.StateNoTTL, 1, "c", 0, inspect.AnomalyNoTTL, "m1"},
		{"foreign", inspect.StateForeign, 0, "", 0, inspect.AnomalyWrongType, "m2"},
		{"free", inspect.StateFree, 0, "", 0, "", ""},
		{"opaque", inspect.StateHeld, 3, "", 0, "", ""},
	}
	for _, tt := range tests {
		r := row(t, s, tt.res)
		if r.State != tt.state || r.Holders != tt.holders || r.Owner != tt.owner || r.Token != tt.token || r.Uncertain {
			t.Errorf("%s: state %s holders %d owner %q token %d uncertain %v; want %s %d %q %d false",
				tt.res, r.State, r.Holders, r.Owner, r.Token, r.Uncertain, tt.state, tt.holders, tt.owner, tt.token)
		}
		if tt.anomaly != "" && !hasAnomaly(r, tt.anomaly, tt.master) {
			t.Errorf("%s: anomalies %+v, want %s on %s", tt.res, r.Anomalies, tt.anomaly, tt.master)
		}
		if tt.anomaly == "" && len(r.Anomalies) > 0 {
			t.Errorf("%s: unexpected anomalies %+v", tt.res, r.Anomalies)
		}
	}
	if r := row(t, s, "held"); r.ValidityMs < 25000 || r.ValidityMs > 30000 {
		t.Errorf("held validity %dms, want about 30s minus drift", r.ValidityMs)
	}
	for _, r := range s.Resources {
		if strings.HasSuffix(r.Key, ":fence") {
			t.Errorf("fence counter %s reported as a row (%s)", r.Key, r.State)
		}
	}
	if got := len(s.Resources); got != len(tests) {
		t.Errorf("%d rows, want %d", got, len(tests))
	}
	if s.Summary.Held != 3 || s.Summary.Free != 1 || s.Summary.Split != 1 {
		t.Errorf("summary %+v", s.Summary)
	}
	if inspect.ExitCode(s) != 3 {
		t.Errorf("exit code %d, want 3 (anomalies)", inspect.ExitCode(s))
	}

}

// A master whose previous read is still in flight is reported down at once, and no
// second read of it is started.
func TestPollOneReadInFlight(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{})
	c := testConfig(t, ms, nil)
	p := newPoller(t, c)
	p.ms[1].busy.Store(true) // as if the last poll's read of m2 were stuck
	do(t, ms, "CONFIG", "RESETSTAT")
	s := p.Poll(context.Background())
	if s.Masters[1].Up || !strings.Contains(s.Masters[1].Error, "previous poll still running") || !s.Masters[0].Up {
		t.Fatalf("masters %+v", s.Masters)
	}
	info, err := redis.String(ms[1].Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "cmdstat_time") || strings.Contains(info, "cmdstat_scan") {
		t.Errorf("a second read of m2 was started:\n%s", info)
	}
	p.ms[1].busy.Store(false)
	if s := p.Poll(context.Background()); !s.Masters[1].Up {
		t.Errorf("m2 still down once its read finished: %+v", s.Masters[1])
	}
}

// readsInFlight counts goroutines that are reading a master.
func readsInFlight() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "inspect.readMaster(")
}
