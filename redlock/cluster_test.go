package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

func clusterClient(t *testing.T, cl *redistest.Cluster, password string, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithNodeTimeout(200 * time.Millisecond), WithRetryDelay(20 * time.Millisecond)}, opts...)
	dial := []redis.DialOption{redis.DialPassword(password)}
	c, err := NewInstances([]Instance{{Cluster: &Cluster{Seeds: cl.Seeds()[:1], DialOptions: dial}}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// asking reads key on s the way a client does during a slot import: ASKING, then GET.
func asking(t *testing.T, s *redistest.Server, key string) string {
	t.Helper()
	conn, err := redis.Dial("tcp", s.Addr, redis.DialReadTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Send("ASKING")
	conn.Send("GET", key)
	conn.Flush()
	if _, err := conn.Receive(); err != nil {
		t.Fatal(err)
	}
	v, err := redis.String(conn.Receive())
	if err != nil && err != redis.ErrNil {
		t.Fatal(err)
	}
	return v
}

func TestClusterAsOneInstance(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := clusterClient(t, cl, "")
	if c.Masters() != 1 || c.Quorum() != 1 {
		t.Fatalf("Masters %d, Quorum %d; want 1 and 1", c.Masters(), c.Quorum())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// One key per shard: acquire, extend, release each on its own shard.
	for _, sh := range cl.Shards {
		res := cl.KeyOn(sh, "job-")
		l, err := c.Acquire(ctx, res, 10*time.Second)
		if err != nil {
			t.Fatalf("acquire %s (shard %d): %v", res, sh.Index, err)
		}
		if v, err := redis.String(sh.Master.Do("GET", res)); err != nil || v != l.Value() {
			t.Fatalf("GET %s on shard %d = %q, %v; want the lock value", res, sh.Index, v, err)
		}
		if _, err := c.Acquire(ctx, res, time.Second); err == nil {
			t.Fatalf("%s acquired twice", res)
		}
		if v, r := c.Values(ctx, c.Key(res)); len(v) != 1 || v[0] != l.Value() || r.Nodes[0].Outcome != OK {
			t.Fatalf("Values %s (shard %d) = %q %+v; want the lock value, read on its shard", res, sh.Index, v, r)
		}
		if err := c.Extend(ctx, l, 20*time.Second); err != nil {
			t.Fatalf("extend %s: %v", res, err)
		}
		if ms, _ := redis.Int64(sh.Master.Do("PTTL", res)); ms < 15000 {
			t.Fatalf("PTTL %s on shard %d = %d after extending to 20s", res, sh.Index, ms)
		}
		if err := c.Release(ctx, l); err != nil {
			t.Fatalf("release %s: %v", res, err)
		}
		if n, _ := redis.Int(sh.Master.Do("EXISTS", res)); n != 0 {
			t.Fatalf("%s still on shard %d after release", res, sh.Index)
		}
		if v, r := c.Values(ctx, c.Key(res)); len(v) != 1 || v[0] != "" || r.Nodes[0].Outcome != Absent {
			t.Fatalf("Values %s after release = %q %+v; want Absent", res, v, r)
		}
	}

	// A slot being migrated: keys still on the source are served there, keys already
	// moved (or new ones) through ASK on the target.
	a, b, fresh := "{mig}a", "{mig}b", "{mig}fresh"
	slot := topology.Slot(a)
	from := cl.SlotOwner(slot)
	to := cl.Shards[(from.Index+1)%len(cl.Shards)]
	la, err := c.Acquire(ctx, a, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := c.Acquire(ctx, b, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := cl.BeginMigration(slot, to)
	m.MoveKeys(a)
	if err := c.Extend(ctx, la, 30*time.Second); err != nil {
		t.Fatalf("extend of a key moved during migration (ASK): %v", err)
	}
	if err := c.Extend(ctx, lb, 30*time.Second); err != nil {
		t.Fatalf("extend of a key not yet moved: %v", err)
	}
	lf, err := c.Acquire(ctx, fresh, 20*time.Second)
	if err != nil {
		t.Fatalf("acquire of a new key in a migrating slot (ASK): %v", err)
	}
	if v := asking(t, to.Master, fresh); v != lf.Value() {
		t.Fatalf("new key during migration: %q on the target; want the lock value", v)
	}
	if v := asking(t, to.Master, a); v != la.Value() {
		t.Fatalf("moved key on the target = %q", v)
	}
	if _, err := c.Acquire(ctx, a, time.Second); err == nil {
		t.Fatal("a moved key was acquired a second time during migration")
	}
	m.MoveKeys()
	m.Finish()

	// After the migration the client's slot map is stale: MOVED leads it to the target.
	allOK(t, "extend-value after migration (MOVED)")(c.ExtendValue(ctx, b, lb.Value(), 30*time.Second))
	if ms, _ := redis.Int64(to.Master.Do("PTTL", b)); ms < 25000 {
		t.Fatalf("PTTL of %s on the target = %d after extending to 30s", b, ms)
	}
	for _, l := range []*Lock{la, lb, lf} {
		if err := c.Release(ctx, l); err != nil {
			t.Fatalf("release %s after migration: %v", l.Key(), err)
		}
		if n, _ := redis.Int(to.Master.Do("EXISTS", l.Key())); n != 0 {
			t.Fatalf("%s still on the target after release", l.Key())
		}
	}
	if _, err := c.Acquire(ctx, a, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	allOK(t, "delete after migration")(c.Delete(ctx, a))
	if n, _ := redis.Int(to.Master.Do("EXISTS", a)); n != 0 {
		t.Fatalf("%s still on the target after delete", a)
	}
	if n, _ := redis.Int(from.Master.Do("DBSIZE")); n != 0 {
		t.Fatalf("the source shard still holds %d keys", n)
	}
}

func TestClusterPausedShard(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := clusterClient(t, cl, "", WithRetries(0), WithNodeTimeout(100*time.Millisecond))
	ctx := context.Background()
	live, paused, paused2 := cl.KeyOn(cl.Shards[0], "r"), cl.KeyOn(cl.Shards[2], "r"), cl.KeyOn(cl.Shards[2], "q")
	if _, err := c.Acquire(ctx, paused, 10*time.Second); err != nil { // the pipes are up
		t.Fatal(err)
	}
	cl.Shards[2].Master.Pause()
	defer cl.Shards[2].Master.Resume()

	start := time.Now()
	_, err := c.Acquire(ctx, paused2, 10*time.Second)
	_, err2 := c.ReleaseValue(ctx, paused, "whatever")
	elapsed := time.Since(start)
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Result.Nodes[0].Outcome != Timeout {
		t.Fatalf("acquire on a paused shard: %v; want a timeout", err)
	}
	if !errors.Is(err2, ErrNoQuorum) {
		t.Fatalf("release-value on a paused shard: %v; want ErrNoQuorum", err2)
	}
	if elapsed > 2*time.Second { // two calls, 100ms node timeout each, generous margin
		t.Fatalf("two calls on a paused shard took %v", elapsed)
	}
	l, err := c.Acquire(ctx, live, 10*time.Second)
	if err != nil {
		t.Fatalf("acquire on a live shard while another is paused: %v", err)
	}
	if err := c.Release(ctx, l); err != nil {
		t.Fatal(err)
	}

	// A new client whose first seed is the paused node learns the slot map from the next
	// seed at once: its very first call (no retries) succeeds.
	seeds := []string{cl.Shards[2].Master.Addr, cl.Shards[0].Master.Addr}
	fresh, err := NewInstances([]Instance{{Cluster: &Cluster{Seeds: seeds}}}, WithRetries(0), WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if l, err = fresh.Acquire(ctx, live, 10*time.Second); err != nil {
		t.Fatalf("new client, first seed paused: %v", err)
	}
	if err := fresh.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

func TestClusterFencing(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Node: redistest.Options{Password: "cpw"}})
	c := clusterClient(t, cl, "cpw", WithFencing(), WithKeyPrefix("lock:"))
	ctx := context.Background()
	if _, err := c.Acquire(ctx, "billing", time.Second); !errors.Is(err, ErrInvalidResource) || !strings.Contains(err.Error(), "hash tag") {
		t.Fatalf("fenced acquire of a key without hash tag on a cluster: %v; want ErrInvalidResource about hash tags", err)
	}
	var last int64
	for i := 0; i < 3; i++ {
		l, err := c.Acquire(ctx, "{billing}", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("token %d after %d", l.Token(), last)
		}
		last = l.Token()
		sh := cl.ShardOf("lock:{billing}")
		if n, err := redis.Int64(sh.Master.Do("GET", FenceKey("lock:{billing}"))); err != nil || n != last {
			t.Fatalf("fence counter on shard %d = %d, %v; want %d", sh.Index, n, err, last)
		}
		if err := c.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClusterSeedNotInClusterMode(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c, err := NewInstances([]Instance{{Cluster: &Cluster{Seeds: []string{s.Addr}}}}, WithRetries(0), WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Acquire(context.Background(), "r", time.Second)
	if err == nil || !strings.Contains(err.Error(), "not a cluster node") {
		t.Fatalf("acquire on a plain server given as cluster seed: %v; want 'not a cluster node'", err)
	}
}
