package topology

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

func dialer(password string) Dialer {
	return func(ctx context.Context, addr string) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr, redis.DialPassword(password))
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestClusterSlotsAndShards(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: 1})
	conn, err := dialer("")(ctx(t), c.Seeds()[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	keys := []string{"", "a", "lock:billing:nightly", "{user1000}.following", "{user1000}.following:fence",
		"foo{}{bar}", "foo{{bar}}zap", "{bar", "x{}y", "é€"}
	for i := 0; i < 200; i++ {
		b := make([]byte, rand.IntN(20))
		for j := range b {
			b[j] = byte(rand.IntN(256))
		}
		keys = append(keys, string(b))
	}
	for _, k := range keys {
		want, err := redis.Int(conn.Do("CLUSTER", "KEYSLOT", k))
		if err != nil {
			t.Fatal(err)
		}
		if got := Slot(k); got != want {
			t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
	if Slot("{t}x") != Slot("{t}x:fence") {
		t.Error("a key with a hash tag and its fence key are in different slots")
	}

	shards, err := Shards(ctx(t), conn)
	if err != nil {
		t.Fatal(err)
	}
	checkShards(t, "CLUSTER SHARDS", c, shards)

	v, err := redis.Values(conn.Do("CLUSTER", "SLOTS"))
	if err != nil {
		t.Fatal(err)
	}
	fromSlots, err := parseSlots(v)
	if err != nil {
		t.Fatal(err)
	}
	checkShards(t, "CLUSTER SLOTS", c, fromSlots)

	// Discover skips a dead seed; the slot map agrees with the servers.
	dead := redistest.Start(t, redistest.Options{})
	dead.Kill()
	shards, err = Discover(ctx(t), dialer(""), []string{dead.Addr, c.Seeds()[2]})
	if err != nil {
		t.Fatalf("Discover with a dead first seed: %v", err)
	}
	owners := Owners(shards)
	for _, sh := range c.Shards {
		k := c.KeyOn(sh, "k")
		if owners[Slot(k)] != sh.Master.Addr {
			t.Errorf("Owners: %s on %s; the cluster says %s", k, owners[Slot(k)], sh.Master.Addr)
		}
	}
}

func checkShards(t *testing.T, how string, c *redistest.Cluster, shards []Shard) {
	t.Helper()
	if len(shards) != len(c.Shards) {
		t.Fatalf("%s: %d shards; want %d", how, len(shards), len(c.Shards))
	}
	for i, sh := range shards {
		want := c.Shards[i]
		if sh.Master != want.Master.Addr || sh.ID != want.ID {
			t.Errorf("%s: shard %d master %s (%s); want %s (%s)", how, i, sh.Master, sh.ID, want.Master.Addr, want.ID)
		}
		// CLUSTER SLOTS leaves out replicas that have not replicated anything yet.
		if len(sh.Replicas) > 0 && (len(sh.Replicas) != 1 || sh.Replicas[0] != want.Replicas[0].Addr) ||
			len(sh.Replicas) == 0 && how == "CLUSTER SHARDS" {
			t.Errorf("%s: shard %d replicas %v; want %s", how, i, sh.Replicas, want.Replicas[0].Addr)
		}
		lo, hi := i*Slots/3, (i+1)*Slots/3-1
		if len(sh.Slots) != 1 || sh.Slots[0] != [2]int{lo, hi} {
			t.Errorf("%s: shard %d slots %v; want [%d %d]", how, i, sh.Slots, lo, hi)
		}
	}
}

func TestShardsOnPlainServer(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	_, err := Discover(ctx(t), dialer(""), []string{s.Addr})
	if !errors.Is(err, ErrNotCluster) || !strings.Contains(err.Error(), s.Addr) {
		t.Fatalf("Discover on a plain server: %v; want ErrNotCluster naming %s", err, s.Addr)
	}
}

func TestResolveMaster(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Node: redistest.Options{Password: "pw"}, SentinelPassword: "spw"})
	dead := redistest.Start(t, redistest.Options{})
	dead.Kill()
	sentinels := append([]string{dead.Addr}, g.SentinelAddrs()...)

	addr, answers, err := ResolveMaster(ctx(t), sentinels, g.Name, dialer("spw"), dialer("pw"))
	if err != nil || addr != g.Nodes[0].Addr {
		t.Fatalf("ResolveMaster = %q, %v; want %s", addr, err, g.Nodes[0].Addr)
	}
	if len(answers) != 4 || answers[0].Err == nil || answers[1].Addr != addr {
		t.Fatalf("answers %+v: want the dead sentinel's error first, then the master", answers)
	}
	if _, _, err := ResolveMaster(ctx(t), g.SentinelAddrs(), "nosuch", dialer("spw"), dialer("pw")); err == nil ||
		!strings.Contains(err.Error(), ErrUnknownMaster.Error()) {
		t.Fatalf("ResolveMaster of an unknown name: %v", err)
	}

	old := g.Failover()
	next := g.WaitNewMaster(old, 15*time.Second)
	addr, _, err = ResolveMaster(ctx(t), sentinels, g.Name, dialer("spw"), dialer("pw"))
	if err != nil || addr != next.Addr {
		t.Fatalf("after failover ResolveMaster = %q, %v; want %s", addr, err, next.Addr)
	}

	// A hung sentinel (SIGSTOP) does not hold up the resolution: the other two agree.
	g.Sentinels[0].Pause()
	addr, answers, err = ResolveMaster(ctx(t), g.SentinelAddrs(), g.Name, dialer("spw"), dialer("pw"))
	g.Sentinels[0].Resume()
	if err != nil || addr != next.Addr {
		t.Fatalf("with a paused sentinel ResolveMaster = %q, %v; want %s", addr, err, next.Addr)
	}
	if !errors.Is(answers[0].Err, errNotWaited) {
		t.Fatalf("the paused sentinel's answer: %v; want it not waited for", answers[0].Err)
	}

	// The reported master turns into a replica (a replication loop): its ROLE says
	// slave, and ResolveMaster must not trust the sentinels' report.
	host, port, _ := strings.Cut(old, ":")
	if _, err := next.Do("REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	_, _, err = ResolveMaster(ctx(t), g.SentinelAddrs(), g.Name, dialer("spw"), dialer("pw"))
	if err == nil || !strings.Contains(err.Error(), "ROLE slave") {
		t.Fatalf("ResolveMaster with the reported master turned replica: %v; want a ROLE slave error", err)
	}
}
