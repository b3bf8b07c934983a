package redistest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// SentinelOptions configures a Sentinel group. The zero value is one master, one
// replica and three sentinels watching it as "mymaster" with quorum 2, a 1 s
// down-after period and a 3 s failover timeout, so that a failover (forced or
// automatic) completes within a few seconds.
type SentinelOptions struct {
	Name             string        // master name (default "mymaster")
	Replicas         int           // replicas of the master (default 1)
	Sentinels        int           // sentinel processes (default 3)
	Quorum           int           // sentinels that must agree the master is down (default majority)
	DownAfter        time.Duration // down-after-milliseconds (default 1s)
	FailoverTimeout  time.Duration // failover-timeout (default 3s)
	Node             Options       // options of the master and replicas; Password is also masterauth and the sentinels' auth-pass
	SentinelPassword string        // requirepass of the sentinels ("" = none)
}

// SentinelGroup is a master/replica group managed by Sentinel: real redis-server
// processes, the sentinels run as redis-server --sentinel. All are stopped by
// t.Cleanup.
type SentinelGroup struct {
	Name      string    // the master name the sentinels know the group by
	Sentinels []*Server // the sentinel processes
	Nodes     []*Server // the data nodes; Nodes[0] was started as the master

	t    testing.TB
	opts SentinelOptions
}

// StartSentinelGroup starts the data nodes (replicas replicating the master), then the
// sentinels, and returns once every sentinel knows the master, every replica (with its
// link up) and every other sentinel: from then on SENTINEL FAILOVER and automatic
// failover work.
func StartSentinelGroup(t testing.TB, o SentinelOptions) *SentinelGroup {
	t.Helper()
	if o.Name == "" {
		o.Name = "mymaster"
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Sentinels <= 0 {
		o.Sentinels = 3
	}
	if o.Quorum <= 0 {
		o.Quorum = o.Sentinels/2 + 1
	}
	if o.DownAfter <= 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 3 * time.Second
	}
	g := &SentinelGroup{Name: o.Name, t: t, opts: o}
	master := start(t, o.Node, roleGroup)
	g.Nodes = append(g.Nodes, master)
	for i := 0; i < o.Replicas; i++ {
		ro := o.Node
		ro.Config = append(append([]string(nil), o.Node.Config...), "replicaof "+hostPort(master.Addr))
		g.Nodes = append(g.Nodes, start(t, ro, roleGroup))
	}
	for _, r := range g.Nodes[1:] {
		waitFor(t, 10*time.Second, "replica "+r.Addr+" in sync", func() error { return linkUp(r) })
	}
	for i := 0; i < o.Sentinels; i++ {
		so := Options{Password: o.SentinelPassword, Config: []string{
			"sentinel resolve-hostnames no",
			fmt.Sprintf("sentinel monitor %s %s %d", o.Name, hostPort(master.Addr), o.Quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", o.Name, o.DownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", o.Name, o.FailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", o.Name),
		}}
		if o.Node.Password != "" {
			so.Config = append(so.Config, fmt.Sprintf("sentinel auth-pass %s %q", o.Name, o.Node.Password))
		}
		g.Sentinels = append(g.Sentinels, start(t, so, roleSentinel))
	}
	g.waitSettled(master.Addr, 30*time.Second)
	return g
}

// SentinelAddrs returns the sentinels' addresses, in order.
func (g *SentinelGroup) SentinelAddrs() []string { return Addrs(g.Sentinels) }

// MasterAddr returns the master address a majority of the running sentinels report
// (SENTINEL GET-MASTER-ADDR-BY-NAME); the test fails when there is no majority.
func (g *SentinelGroup) MasterAddr() string {
	g.t.Helper()
	addr, err := g.reported()
	if err != nil {
		g.t.Fatalf("redistest: %v", err)
	}
	return addr
}

// Master returns the data node the sentinels report as master (see MasterAddr).
func (g *SentinelGroup) Master() *Server {
	g.t.Helper()
	return g.Node(g.MasterAddr())
}

// Replicas returns the running data nodes whose ROLE says replica.
func (g *SentinelGroup) Replicas() []*Server {
	var out []*Server
	for _, n := range g.Nodes {
		if r, err := Role(n); err == nil && r == "slave" {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the data node at addr; the test fails when there is none.
func (g *SentinelGroup) Node(addr string) *Server {
	g.t.Helper()
	for _, n := range g.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	g.t.Fatalf("redistest: %s is not a data node of group %s", addr, g.Name)
	return nil
}

// Failover sends SENTINEL FAILOVER to the first sentinel that accepts it (a forced
// failover, no agreement needed) and returns the address of the master being replaced.
// It does not wait: use WaitNewMaster.
func (g *SentinelGroup) Failover() string {
	g.t.Helper()
	old := g.MasterAddr()
	var last error
	for _, s := range g.Sentinels {
		if s.PID() == 0 {
			continue
		}
		if _, err := s.Do("SENTINEL", "FAILOVER", g.Name); err != nil {
			last = err
			continue
		}
		return old
	}
	g.t.Fatalf("redistest: SENTINEL FAILOVER %s refused by every sentinel: %v", g.Name, last)
	return ""
}

// KillMaster kills the current master's process (SIGKILL) and returns it; Sentinel
// fails over after DownAfter. Restart it to have it rejoin as a replica.
func (g *SentinelGroup) KillMaster() *Server {
	g.t.Helper()
	m := g.Master()
	m.Kill()
	return m
}

// PauseMaster stops the current master with SIGSTOP and returns it (Resume it later).
func (g *SentinelGroup) PauseMaster() *Server {
	g.t.Helper()
	m := g.Master()
	m.Pause()
	return m
}

// WaitNewMaster waits up to timeout until a majority of the sentinels report a master
// other than old, that node's ROLE says master, and no sentinel has a failover in
// progress; it returns the new master. The test fails on timeout.
func (g *SentinelGroup) WaitNewMaster(old string, timeout time.Duration) *Server {
	g.t.Helper()
	var addr string
	waitFor(g.t, timeout, "a new master of "+g.Name+" replacing "+old, func() error {
		a, err := g.reported()
		if err != nil {
			return err
		}
		if a == old {
			return fmt.Errorf("sentinels still report %s", a)
		}
		addr = a
		return g.settled(a, false)
	})
	return g.Node(addr)
}

// waitSettled waits until every sentinel agrees on master, knows all replicas with
// their links up and all other sentinels.
func (g *SentinelGroup) waitSettled(master string, timeout time.Duration) {
	g.t.Helper()
	waitFor(g.t, timeout, "sentinels of "+g.Name+" to settle", func() error { return g.settled(master, true) })
}

// settled checks that master's ROLE says master and that the running sentinels report
// it with no failover in progress; with full, that every sentinel also knows every
// replica (link up) and every other sentinel.
func (g *SentinelGroup) settled(master string, full bool) error {
	if r, err := Role(g.Node(master)); err != nil || r != "master" {
		return fmt.Errorf("%s: ROLE %q, %v", master, r, err)
	}
	for _, s := range g.Sentinels {
		if s.PID() == 0 {
			continue
		}
		m, err := redis.StringMap(s.Do("SENTINEL", "MASTER", g.Name))
		if err != nil {
			return fmt.Errorf("sentinel %s: %v", s.Addr, err)
		}
		if a := net.JoinHostPort(m["ip"], m["port"]); a != master {
			return fmt.Errorf("sentinel %s reports master %s", s.Addr, a)
		}
		if m["flags"] != "master" {
			return fmt.Errorf("sentinel %s: master flags %q", s.Addr, m["flags"])
		}
		if !full {
			continue
		}
		if m["num-other-sentinels"] != strconv.Itoa(len(g.Sentinels)-1) {
			return fmt.Errorf("sentinel %s knows %s other sentinels", s.Addr, m["num-other-sentinels"])
		}
		reps, err := redis.Values(s.Do("SENTINEL", "REPLICAS", g.Name))
		if err != nil {
			return fmt.Errorf("sentinel %s: %v", s.Addr, err)
		}
		up := 0
		for _, r := range reps {
			rm, _ := redis.StringMap(r, nil)
			if rm["flags"] == "slave" && rm["master-link-status"] == "ok" {
				up++
			}
		}
		if up != len(g.Nodes)-1 {
			return fmt.Errorf("sentinel %s sees %d healthy replicas of %d", s.Addr, up, len(g.Nodes)-1)
		}
	}
	return nil
}

// reported returns the master address reported by a majority of running sentinels.
func (g *SentinelGroup) reported() (string, error) {
	votes := map[string]int{}
	running := 0
	var last error
	for _, s := range g.Sentinels {
		if s.PID() == 0 {
			continue
		}
		running++
		a, err := redis.Strings(s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.Name))
		if err != nil || len(a) != 2 {
			last = fmt.Errorf("sentinel %s: %v %v", s.Addr, a, err)
			continue
		}
		votes[net.JoinHostPort(a[0], a[1])]++
	}
	for a, n := range votes {
		if n > running/2 {
			return a, nil
		}
	}
	return "", fmt.Errorf("no majority of %d sentinels reports one master of %s: %v (%v)", running, g.Name, votes, last)
}

// Role returns the first element of ROLE on s: "master", "slave" or "sentinel".
func Role(s *Server) (string, error) {
	v, err := redis.Values(s.Do("ROLE"))
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", fmt.Errorf("empty ROLE reply")
	}
	return redis.String(v[0], nil)
}

// linkUp reports whether replica r's link to its master is up.
func linkUp(r *Server) error {
	info, err := redis.String(r.Do("INFO", "replication"))
	if err != nil {
		return err
	}
	if !strings.Contains(info, "master_link_status:up") {
		return fmt.Errorf("master link not up")
	}
	return nil
}

// hostPort turns "host:port" into "host port", as redis.conf directives want it.
func hostPort(addr string) string {
	h, p, _ := net.SplitHostPort(addr)
	return h + " " + p
}

// waitFor polls cond every 50 ms until it returns nil; after timeout the test fails
// with what was awaited and cond's last error.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: waited %v for %s: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
