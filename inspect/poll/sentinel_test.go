package poll

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// sentinelSet is a 3-instance set: plain m1, the Sentinel group m2, plain m3.
func sentinelSet(t *testing.T, g *redistest.SentinelGroup, plain []*redistest.Server) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Inspect.Timeout = time.Second
	cfg.Inspect.MaxTTL = time.Minute
	cfg.Masters = []config.MasterConfig{
		{Name: "m1", Addr: plain[0].Addr},
		{Name: "m2", Sentinels: g.SentinelAddrs(), MasterName: g.Name, Password: "pw"},
		{Name: "m3", Addr: plain[1].Addr},
	}
	return cfg
}

// pollUntil polls until ok says yes or timeout passes; it returns the last snapshot.
func pollUntil(t *testing.T, p *Poller, timeout time.Duration, ok func(*inspect.Snapshot) bool) (*inspect.Snapshot, bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := p.Poll(context.Background())
		if ok(s) {
			return s, true
		}
		if time.Now().After(deadline) {
			return s, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func hasFinding(m inspect.Master, code string) bool {
	return strings.Contains(findingCodes(m.Findings), code)
}

func TestPollSentinelGroupFollowsFailover(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Node: redistest.Options{Password: "pw"}})
	plain := redistest.StartN(t, 2, redistest.Options{})
	cfg := sentinelSet(t, g, plain)
	p := newPoller(t, cfg)

	value := "worker-1#" + hex32
	first := g.Master()
	for _, s := range append([]*redistest.Server{first}, plain...) {
		if _, err := s.Do("SET", "billing", value, "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	s := p.Poll(context.Background())
	m2 := s.Masters[1]
	if !m2.Up || m2.Via != "sentinel" || m2.SentinelMasterName != g.Name || m2.Addr != first.Addr || m2.Role != "master" || m2.Server != "redis" {
		t.Fatalf("m2 before failover: %+v", m2)
	}
	if r := row(t, s, "billing"); r.State != inspect.StateHeld || r.Holders != 3 {
		t.Fatalf("billing: %+v", r)
	}
	if hasFinding(m2, "failed-over-recently") || hasFinding(m2, "sentinel-quorum") || hasFinding(m2, "few-sentinels") || !hasFinding(m2, "min-replicas") {
		t.Errorf("findings before failover: %q", findingCodes(m2.Findings))
	}
	if inspect.ExitCode(s) != 3 { // restarted-recently on fresh servers; min-replicas alone would be 0
		t.Errorf("exit %d", inspect.ExitCode(s))
	}

	// SENTINEL FAILOVER: the poller follows the new master within the failover time.
	old := g.Failover()
	next := g.WaitNewMaster(old, 15*time.Second)
	s, ok := pollUntil(t, p, 5*time.Second, func(s *inspect.Snapshot) bool { return s.Masters[1].Addr == next.Addr && s.Masters[1].Up })
	if !ok {
		t.Fatalf("poller still reads %s (up %v, %s), want the new master %s", s.Masters[1].Addr, s.Masters[1].Up, s.Masters[1].Error, next.Addr)
	}
	if m2 := s.Masters[1]; !hasFinding(m2, "failed-over-recently") || m2.Role != "master" {
		t.Errorf("after SENTINEL FAILOVER: role %s, findings %q", m2.Role, findingCodes(m2.Findings))
	}
	if r := row(t, s, "billing"); r.Nodes[1].Value != value {
		t.Errorf("the replicated lock on the new master: %+v", r.Nodes[1])
	}
	// A fresh poller (a dump) reports it too, from the node and the sentinels alone.
	fresh := newPoller(t, cfg).Poll(context.Background())
	if m2 := fresh.Masters[1]; m2.Addr != next.Addr || !hasFinding(m2, "failed-over-recently") {
		t.Errorf("fresh poll after failover: addr %s findings %q", m2.Addr, findingCodes(m2.Findings))
	}

	// Kill the master: Sentinel fails over by itself, and the poller follows.
	if _, err := first.Do("REPLICAOF", "127.0.0.1", strings.TrimPrefix(next.Addr, "127.0.0.1:")); err != nil {
		t.Fatal(err)
	}
	waitReplica(t, first)
	killed := g.KillMaster()
	third := g.WaitNewMaster(killed.Addr, 20*time.Second)
	s, ok = pollUntil(t, p, 5*time.Second, func(s *inspect.Snapshot) bool { return s.Masters[1].Addr == third.Addr && s.Masters[1].Up })
	if !ok {
		t.Fatalf("after the kill the poller reads %s (%s), want %s", s.Masters[1].Addr, s.Masters[1].Error, third.Addr)
	}
	if !hasFinding(s.Masters[1], "failed-over-recently") {
		t.Errorf("after automatic failover: findings %q", findingCodes(s.Masters[1].Findings))
	}

	// Two of three sentinels gone: the last one cannot reach the quorum (2) once it
	// sees them down (down-after 1 s).
	g.Sentinels[0].Kill()
	g.Sentinels[1].Kill()
	s, ok = pollUntil(t, p, 6*time.Second, func(s *inspect.Snapshot) bool { return hasFinding(s.Masters[1], "sentinel-quorum") })
	if m2 := s.Masters[1]; !ok || !hasFinding(m2, "sentinel-down") || !m2.Up || m2.Addr != third.Addr {
		t.Errorf("two sentinels down: up %v addr %s findings %q", m2.Up, m2.Addr, findingCodes(m2.Findings))
	}
	// A master name the sentinels do not know: a clear error.
	cfg.Masters[1].MasterName = "nope"
	s = newPoller(t, cfg).Poll(context.Background())
	if s.Masters[1].Up || !strings.Contains(s.Masters[1].Error, "does not monitor") {
		t.Errorf("unknown master name: %+v", s.Masters[1])
	}
}

// waitReplica waits until r's link to its master is up.
func waitReplica(t *testing.T, r *redistest.Server) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := r.Do("INFO", "replication")
		if b, _ := info.([]byte); err == nil && strings.Contains(string(b), "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replication link not up", r.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSentinelFindingsFewSentinels(t *testing.T) {
	cfg := config.Default()
	st := &masterState{sentinel: &verdict.SentinelInfo{Configured: 2, Answered: 2, Known: 2, PromotedMs: -1}}
	m := &inspect.Master{Name: "g", Up: true}
	if fs := verdict.SentinelFindings(cfg, m, st.sentinel, st.health, st.changedAt, time.Now(), 0); !strings.Contains(findingCodes(fs), "few-sentinels") || strings.Contains(findingCodes(fs), "sentinel-down") {
		t.Errorf("2 sentinels: %q", findingCodes(fs))
	}
	st.sentinel.Configured, st.sentinel.Known = 3, 3
	if fs := verdict.SentinelFindings(cfg, m, st.sentinel, st.health, st.changedAt, time.Now(), 0); strings.Contains(findingCodes(fs), "few-sentinels") || !strings.Contains(findingCodes(fs), "sentinel-down") {
		t.Errorf("2 of 3 sentinels answering: %q", findingCodes(fs))
	}
}

// A Sentinel group's master whose key read takes several times inspect.timeout, while
// it answers every page, is up and read whole, as a plain master is (the poll is slow,
// not the master down).
func TestLongReadOfASentinelMasterIsSlowNotDown(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Node: redistest.Options{Password: "pw"}})
	plain := redistest.StartN(t, 2, redistest.Options{})
	const keys = 150000
	c := g.Master().Pool.Get()
	for i := range keys {
		c.Send("SET", fmt.Sprintf("job:%06d", i), "w#"+hex32, "PX", 60000)
	}
	if _, err := c.Do(""); err != nil {
		t.Fatal(err)
	}
	c.Close()
	cfg := sentinelSet(t, g, plain)
	// The poll is slow when it takes longer than poll_interval: 400 ms, so that this
	// one (15,000 SCAN pages, over a second even on a fast machine) is, wherever it runs.
	cfg.Inspect.Timeout, cfg.Inspect.ScanCount, cfg.Inspect.PollInterval = 300*time.Millisecond, 10, 400*time.Millisecond
	p := newPoller(t, cfg)
	start := time.Now()
	s := p.Poll(context.Background())
	took := time.Since(start)
	if m := s.Masters[1]; !m.Up || !s.Complete || len(s.Resources) != keys || !s.Slow {
		t.Fatalf("after %v: m2 up %v (%s), complete %v, %d rows, slow %v; want up, complete, %d rows, slow",
			took, m.Up, m.Error, s.Complete, len(s.Resources), s.Slow, keys)
	}
	if took < 2*cfg.Inspect.Timeout {
		t.Errorf("the poll took %v: the test needs one longer than inspect.timeout", took)
	}
}
