package redistest

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

func TestSentinelGroupFailover(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{Node: Options{Password: "pw"}})
	if len(g.SentinelAddrs()) != 3 || len(g.Nodes) != 2 {
		t.Fatalf("group has %d sentinels and %d nodes; want 3 and 2", len(g.SentinelAddrs()), len(g.Nodes))
	}
	first := g.Master()
	if first != g.Nodes[0] {
		t.Fatalf("master is %s; want the first node %s", first.Addr, g.Nodes[0].Addr)
	}
	if reps := g.Replicas(); len(reps) != 1 || reps[0] != g.Nodes[1] {
		t.Fatalf("replicas = %v; want the second node", Addrs(reps))
	}
	if _, err := first.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}

	old := g.Failover()
	if old != first.Addr {
		t.Fatalf("Failover replaced %s; want %s", old, first.Addr)
	}
	second := g.WaitNewMaster(old, 15*time.Second)
	if second != g.Nodes[1] {
		t.Fatalf("new master %s; want the replica %s", second.Addr, g.Nodes[1].Addr)
	}
	if v, err := redis.String(second.Do("GET", "k")); err != nil || v != "v" {
		t.Fatalf("GET on the promoted replica = %q, %v; want the replicated v", v, err)
	}
	if _, err := second.Do("SET", "k2", "v2"); err != nil {
		t.Fatalf("SET on the new master: %v", err)
	}

	// Automatic failover. Sentinel demotes a live old master only after it reported
	// itself master for 8 s; do it now, so the kill below has a replica to promote.
	if _, err := first.Do("REPLICAOF", "127.0.0.1", second.Addr[len("127.0.0.1:"):]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "old master to become a replica", func() error { return linkUp(first) })
	killed := g.KillMaster()
	if killed != second {
		t.Fatalf("KillMaster killed %s; want %s", killed.Addr, second.Addr)
	}
	third := g.WaitNewMaster(killed.Addr, 20*time.Second)
	if third != first {
		t.Fatalf("after the kill the master is %s; want %s", third.Addr, first.Addr)
	}
	if v, err := redis.String(third.Do("GET", "k2")); err != nil || v != "v2" {
		t.Fatalf("GET k2 on the master after automatic failover = %q, %v", v, err)
	}
}
