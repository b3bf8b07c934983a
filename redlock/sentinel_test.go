package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

func TestNewInstancesRejects(t *testing.T) {
	p := redistest.Start(t, redistest.Options{}).Pool
	cases := []struct {
		name string
		in   []Instance
		want string
	}{
		{"empty", nil, "no instances"},
		{"none set", []Instance{{}}, "exactly one"},
		{"two set", []Instance{{Pool: p, Cluster: &Cluster{Seeds: []string{"x:1"}}}}, "exactly one"},
		{"same pool", []Instance{{Pool: p}, {Pool: p}}, "same pool"},
		{"sentinel without addrs", []Instance{{Sentinel: &Sentinel{MasterName: "m"}}}, "without addresses"},
		{"sentinel without name", []Instance{{Sentinel: &Sentinel{Addrs: []string{"x:1"}}}}, "master name"},
		{"cluster without seeds", []Instance{{Cluster: &Cluster{}}}, "without seed"},
	}
	for _, tc := range cases {
		c, err := NewInstances(tc.in)
		if err == nil {
			c.Close()
			t.Errorf("%s: NewInstances succeeded", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
	}
}

// groupInstance describes g as a Sentinel instance, with the group's passwords.
func groupInstance(g *redistest.SentinelGroup, interval time.Duration) Instance {
	return Instance{Sentinel: &Sentinel{
		Addrs:               g.SentinelAddrs(),
		MasterName:          g.Name,
		SentinelDialOptions: []redis.DialOption{redis.DialPassword("spw")},
		DialOptions:         []redis.DialOption{redis.DialPassword("pw")},
		Interval:            interval,
	}}
}

// waitResolved waits until instance i of c sends to addr.
func waitResolved(t *testing.T, c *Client, i int, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for c.ResolvedAddr(i) != addr {
		if time.Now().After(deadline) {
			t.Fatalf("instance %d still sends to %q after %v; want %s", i, c.ResolvedAddr(i), timeout, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allOK returns a check of an admin call's result (which waits for every instance):
// OK on all of them.
func allOK(t *testing.T, what string) func(Result, error) {
	return func(res Result, err error) { t.Helper(); checkAllOK(t, what, res, err) }
}

func checkAllOK(t *testing.T, what string, res Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, n := range res.Nodes {
		if n.Outcome != OK {
			t.Fatalf("%s: instance %d %v (%v); want ok everywhere", what, n.Master, n.Outcome, n.Err)
		}
	}
}

// replicate waits until the master's writes reached its replica (WAIT 1).
func replicate(t *testing.T, m *redistest.Server) {
	t.Helper()
	if n, err := redis.Int(m.Do("WAIT", 1, 2000)); err != nil || n < 1 {
		t.Fatalf("WAIT on %s = %d, %v", m.Addr, n, err)
	}
}

func TestSentinelGroupAndPlainMasters(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Node: redistest.Options{Password: "pw"}, SentinelPassword: "spw"})
	plain := redistest.StartN(t, 2, redistest.Options{})
	c, err := NewInstances([]Instance{groupInstance(g, 200*time.Millisecond), {Pool: plain[0].Pool}, {Pool: plain[1].Pool}},
		WithNodeTimeout(200*time.Millisecond), WithRetryDelay(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Masters() != 3 || c.Quorum() != 2 {
		t.Fatalf("Masters %d, Quorum %d; want 3 and 2", c.Masters(), c.Quorum())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first := g.Master()
	l, err := c.Acquire(ctx, "jobs", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitResolved(t, c, 0, first.Addr, 5*time.Second)
	allOK(t, "extend-value")(c.ExtendValue(ctx, "jobs", l.Value(), 30*time.Second))
	if v, err := redis.String(first.Do("GET", "jobs")); err != nil || v != l.Value() {
		t.Fatalf("GET on the group's master = %q, %v; want the lock value", v, err)
	}
	replicate(t, first)

	// SENTINEL FAILOVER: the old master keeps answering as a master for a while; the
	// client must leave it for the promoted replica.
	t0 := time.Now()
	old := g.Failover()
	second := g.WaitNewMaster(old, 15*time.Second)
	settled := time.Since(t0)
	waitResolved(t, c, 0, second.Addr, 10*time.Second)
	t.Logf("SENTINEL FAILOVER: sentinels settled after %v, the client followed after %v", settled, time.Since(t0))
	allOK(t, "extend-value after failover")(c.ExtendValue(ctx, "jobs", l.Value(), 40*time.Second))
	if ms, err := redis.Int64(second.Do("PTTL", "jobs")); err != nil || ms < 30000 {
		t.Fatalf("PTTL on the new master = %d, %v; want the extension (~40s)", ms, err)
	}
	allOK(t, "release-value after failover")(c.ReleaseValue(ctx, "jobs", l.Value()))
	l2, err := c.Acquire(ctx, "jobs2", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitValue(t, second, "jobs2", l2.Value())
	if v, _ := redis.String(first.Do("GET", "jobs2")); v == l2.Value() && !isReplicaOf(first, second) {
		t.Fatalf("the lock landed on the old master %s, which is no replica of the new one", first.Addr)
	}

	// The master dies: Sentinel promotes the replica, the client follows.
	host, port, _ := strings.Cut(second.Addr, ":")
	if _, err := first.Do("REPLICAOF", host, port); err != nil { // Sentinel would do it after ~8 s
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, func() bool { return isReplicaOf(first, second) })
	replicate(t, second)
	t0 = time.Now()
	killed := g.KillMaster()
	third := g.WaitNewMaster(killed.Addr, 20*time.Second)
	settled = time.Since(t0)
	if third != first {
		t.Fatalf("after the kill the master is %s; want %s", third.Addr, first.Addr)
	}
	waitResolved(t, c, 0, third.Addr, 10*time.Second)
	t.Logf("master killed: sentinels settled after %v, the client followed after %v", settled, time.Since(t0))
	allOK(t, "extend-value after the kill")(c.ExtendValue(ctx, "jobs2", l2.Value(), 30*time.Second))
	if err := c.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
	l3, err := c.Acquire(ctx, "jobs3", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitValue(t, third, "jobs3", l3.Value())
	if err := c.Extend(ctx, l3, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	allOK(t, "delete")(c.Delete(ctx, "jobs3"))

	// The master turns replica behind the sentinels' back (they still report it): its
	// READONLY makes the client resolve again, and ROLE keeps it off the stale report.
	host, port, _ = strings.Cut(plain[0].Addr, ":")
	if _, err := third.Do("REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := c.Delete(ctx, "jobs4")
		if err != nil {
			t.Fatal(err)
		}
		n := res.Nodes[0]
		if n.Outcome == OK || n.Outcome == Absent {
			t.Fatalf("delete on a group whose master turned replica: %v; want an error", n.Outcome)
		}
		if len(seen) < 5 {
			seen = append(seen, n.Outcome.String()+": "+n.Err.Error())
		}
		if e := n.Err.Error(); strings.Contains(e, "ROLE says slave") || strings.Contains(e, "ROLE slave") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ROLE refusal within 5s; outcomes: %q", seen)
		}
	}
	t.Logf("outcomes after the master turned replica: %q", seen)
}

// waitValue waits until key holds want on s.
func waitValue(t *testing.T, s *redistest.Server, key, want string) {
	t.Helper()
	waitUntil(t, 2*time.Second, func() bool {
		v, err := redis.String(s.Do("GET", key))
		return err == nil && v == want
	})
}

func isReplicaOf(r, m *redistest.Server) bool {
	info, err := redis.String(r.Do("INFO", "replication"))
	_, port, _ := strings.Cut(m.Addr, ":")
	return err == nil && strings.Contains(info, "master_port:"+port) && strings.Contains(info, "master_link_status:up")
}

// waitUntil polls cond for up to timeout.
func waitUntil(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSentinelUnreachable(t *testing.T) {
	dead := redistest.Start(t, redistest.Options{})
	dead.Kill()
	c, err := NewInstances([]Instance{{Sentinel: &Sentinel{Addrs: []string{dead.Addr}, MasterName: "m"}}},
		WithRetries(0), WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Acquire(context.Background(), "r", time.Second)
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Result.Nodes[0].Outcome == OK {
		t.Fatalf("Acquire with no sentinel reachable: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Acquire took %v with a 100ms node timeout", d)
	}
}
