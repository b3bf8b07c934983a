package redistest

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

func TestClusterShardsAndMigration(t *testing.T) {
	c := StartCluster(t, ClusterOptions{Replicas: 1})
	if len(c.Shards) != 3 || len(c.Nodes()) != 6 {
		t.Fatalf("%d shards, %d nodes; want 3 and 6", len(c.Shards), len(c.Nodes()))
	}
	for _, k := range []string{"", "a", "lock:billing:nightly", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "{bar", "x{}y", "é€"} {
		want, err := redis.Int(c.Shards[0].Master.Do("CLUSTER", "KEYSLOT", k))
		if err != nil {
			t.Fatal(err)
		}
		if got := Slot(k); got != want {
			t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
	for i, sh := range c.Shards {
		if r, err := Role(sh.Replicas[0]); err != nil || r != "slave" {
			t.Fatalf("shard %d replica ROLE %q, %v", i, r, err)
		}
		k := c.KeyOn(sh, "k")
		if got := c.ShardOf(k); got != sh {
			t.Fatalf("KeyOn(shard %d) = %q, which ShardOf puts on shard %d", i, k, got.Index)
		}
		if _, err := sh.Master.Do("SET", k, "v"); err != nil {
			t.Fatalf("SET %s on its own shard: %v", k, err)
		}
		other := c.Shards[(i+1)%3].Master
		if _, err := other.Do("GET", k); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
			t.Fatalf("GET %s on another shard: %v; want MOVED", k, err)
		}
	}

	a, b := "{s}a", "{s}b" // two keys of one slot (hash tag)
	slot := Slot(a)
	if k := KeyInSlot(slot, "x"); Slot(k) != slot {
		t.Fatalf("KeyInSlot(%d) = %q in slot %d", slot, k, Slot(k))
	}
	from := c.SlotOwner(slot)
	to := c.Shards[(from.Index+1)%3]
	for _, k := range []string{a, b} {
		if _, err := from.Master.Do("SET", k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	m := c.BeginMigration(slot, to)
	m.MoveKeys(a)
	if _, err := from.Master.Do("GET", a); err == nil || !strings.HasPrefix(err.Error(), "ASK") {
		t.Fatalf("GET of a moved key on the source during migration: %v; want ASK", err)
	}
	if v, err := redis.String(from.Master.Do("GET", b)); err != nil || v != "v" {
		t.Fatalf("GET of a key not yet moved = %q, %v; want v from the source", v, err)
	}
	m.MoveKeys()
	m.Finish()
	if got := c.SlotOwner(slot); got != to {
		t.Fatalf("after migration slot %d is on shard %d; want %d", slot, got.Index, to.Index)
	}
	for _, k := range []string{a, b} {
		if v, err := redis.String(to.Master.Do("GET", k)); err != nil || v != "v" {
			t.Fatalf("GET %s on the target after migration = %q, %v", k, v, err)
		}
		if _, err := from.Master.Do("GET", k); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
			t.Fatalf("GET %s on the source after migration: %v; want MOVED", k, err)
		}
	}
	c.WaitOK(10 * time.Second)

	// A paused shard: its keys time out, the other shards keep serving.
	p := c.Shards[2]
	p.Master.Pause()
	conn, err := redis.Dial("tcp", p.Master.Addr, redis.DialReadTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ne net.Error
	if _, err := conn.Do("GET", c.KeyOn(p, "k")); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("GET on a paused shard: %v; want a timeout", err)
	}
	k0 := c.KeyOn(c.Shards[1], "k")
	if _, err := c.Shards[1].Master.Do("SET", k0, "w"); err != nil {
		t.Fatalf("SET on a running shard while another is paused: %v", err)
	}
	p.Master.Resume()
}

func TestClusterClockShimOnOneShard(t *testing.T) {
	c := StartCluster(t, ClusterOptions{SkewShards: []int{1}})
	c.Shards[1].Master.SetClock(3*time.Second, 1)
	if d := serverMillis(t, c.Shards[1].Master) - time.Now().UnixMilli(); d < 2900 || d > 3100 {
		t.Fatalf("skewed shard: server - local = %d ms; want ~3000", d)
	}
	if d := serverMillis(t, c.Shards[0].Master) - time.Now().UnixMilli(); d < -100 || d > 100 {
		t.Fatalf("unskewed shard: server - local = %d ms; want ~0", d)
	}
}
