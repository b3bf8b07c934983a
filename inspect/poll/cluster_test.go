package poll

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// clusterConfig is a one-instance set: the whole cluster, quorum 1.
func clusterConfig(c *redistest.Cluster, edit func(*config.Config)) *config.Config {
	cfg := config.Default()
	cfg.Inspect.Timeout = 8 * time.Second // 10k keys with -race on a loaded machine
	cfg.Masters = []config.MasterConfig{{Name: "c1", Cluster: c.Seeds()[:2]}}
	if edit != nil {
		edit(cfg)
	}
	return cfg
}

// plantCluster writes keys on the shards that own them, pipelined: value v#<hex>, PX ttl
// (ttl 0: no expiry); hashes when hash is set.
func plantCluster(t *testing.T, c *redistest.Cluster, keys []string, ttl int64, hash bool) {
	t.Helper()
	byShard := map[*redistest.Shard][]string{}
	owner := slotOwners(t, c)
	for _, k := range keys {
		sh := owner[topology.Slot(k)]
		byShard[sh] = append(byShard[sh], k)
	}
	for sh, ks := range byShard {
		conn := sh.Master.Pool.Get()
		for _, k := range ks {
			switch {
			case hash:
				conn.Send("HSET", k, "holder", "1")
			case ttl > 0:
				conn.Send("SET", k, "w-"+k+"#"+hex32, "PX", ttl)
			default:
				conn.Send("SET", k, "w-"+k+"#"+hex32)
			}
		}
		if err := conn.Flush(); err != nil {
			t.Fatal(err)
		}
		for range ks {
			if _, err := conn.Receive(); err != nil {
				t.Fatal(err)
			}
		}
		conn.Close()
	}
}

// slotOwners maps every slot to its shard, as the cluster says now.
func slotOwners(t *testing.T, c *redistest.Cluster) []*redistest.Shard {
	t.Helper()
	conn := c.Shards[0].Master.Pool.Get()
	defer conn.Close()
	shards, err := topology.Shards(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	owners := make([]*redistest.Shard, topology.Slots)
	for _, sh := range shards {
		for _, cs := range c.Shards {
			if cs.Master.Addr != sh.Master {
				continue
			}
			for _, r := range sh.Slots {
				for s := r[0]; s <= r[1]; s++ {
					owners[s] = cs
				}
			}
		}
	}
	return owners
}

func uniqueRows(t *testing.T, s *inspect.Snapshot) map[string]*inspect.Resource {
	t.Helper()
	rows := map[string]*inspect.Resource{}
	for i := range s.Resources {
		r := &s.Resources[i]
		if rows[r.Resource] != nil {
			t.Fatalf("resource %q has two rows", r.Resource)
		}
		rows[r.Resource] = r
	}
	return rows
}

func TestPollCluster(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	var held, noTTL, hashes []string
	for i := range 10000 {
		switch {
		case i%1000 == 7:
			noTTL = append(noTTL, fmt.Sprintf("lock:nottl:%d", i))
		case i%1000 == 9:
			hashes = append(hashes, fmt.Sprintf("lock:redisson:%d", i))
		default:
			held = append(held, fmt.Sprintf("lock:job:%d", i))
		}
	}
	plantCluster(t, c, held, 120000, false)
	plantCluster(t, c, noTTL, 0, false)
	plantCluster(t, c, hashes, 0, true)
	cfg := clusterConfig(c, func(cfg *config.Config) {
		cfg.Inspect.Resources = []string{"lock:free:1", c.KeyOn(c.Shards[2], "lock:idle:")}
	})
	p := newPoller(t, cfg)
	s := p.Poll(context.Background())
	m := s.Masters[0]
	if !m.Up || !s.Complete || m.Via != "cluster" || len(m.Shards) != 3 || s.Quorum != 1 {
		t.Fatalf("cluster master %+v, complete %v, quorum %d", m, s.Complete, s.Quorum)
	}
	for i, sh := range m.Shards {
		if !sh.Up || sh.Addr != c.Shards[i].Master.Addr || sh.Slots == "" || sh.Server != "redis" || sh.Version == "" || sh.Role != "master" {
			t.Errorf("shard %d: %+v", i, sh)
		}
	}
	if m.Server != "redis" || m.Version == "" {
		t.Errorf("server %q version %q", m.Server, m.Version)
	}
	rows := uniqueRows(t, s)
	if len(rows) != 10002 {
		t.Fatalf("%d rows, want 10000 planted + 2 configured", len(rows))
	}
	for _, k := range held {
		if r := rows[k]; r.State != inspect.StateHeld || r.Holders != 1 || r.ValidityMs < 100000 {
			t.Fatalf("%s: %+v", k, r)
		}
	}
	for _, k := range noTTL {
		if rows[k].State != inspect.StateNoTTL {
			t.Fatalf("%s: state %s", k, rows[k].State)
		}
	}
	for _, k := range hashes {
		if rows[k].State != inspect.StateForeign || rows[k].Nodes[0].Type != "hash" {
			t.Fatalf("%s: %+v", k, rows[k])
		}
	}
	if s.Summary.Held != len(held) || s.Summary.Free != 2 {
		t.Errorf("summary %+v", s.Summary)
	}
	codes := findingCodes(m.Findings)
	if !strings.Contains(codes, "shard-no-replica") || strings.Contains(codes, "cluster-state") || strings.Contains(codes, "slots-uncovered") {
		t.Errorf("cluster findings %q", codes)
	}

	// A shard master paused, and it is the first seed: the shards are found through the
	// next seed, the instance is down (quorum 1 is lost), a configured key on that shard
	// is uncertain, and the keys of the other shards are still shown.
	paused := c.Shards[0].Master
	paused.Pause()
	cfgShort := clusterConfig(c, func(cfg *config.Config) {
		cfg.Inspect.Resources = []string{c.KeyOn(c.Shards[0], "lock:idle:")}
		cfg.Inspect.Timeout = 3 * time.Second // the other shards' 6.6k keys fit in it
	})
	pShort := newPoller(t, cfgShort)
	s = pShort.Poll(context.Background())
	paused.Resume()
	m = s.Masters[0]
	if m.Up || !strings.Contains(m.Error, paused.Addr) || s.Complete || inspect.ExitCode(s) != 1 {
		t.Fatalf("paused shard: up %v error %q complete %v exit %d", m.Up, m.Error, s.Complete, inspect.ExitCode(s))
	}
	if m.Shards[0].Up || !m.Shards[1].Up || !m.Shards[2].Up {
		t.Errorf("shards up: %v %v %v", m.Shards[0].Up, m.Shards[1].Up, m.Shards[2].Up)
	}
	rows = uniqueRows(t, s)
	idle := rows[cfgShort.Inspect.Resources[0]]
	if idle == nil || !idle.Uncertain || idle.Nodes[0].Error == "" {
		t.Errorf("configured key on the paused shard: %+v", idle)
	}
	onOthers, owners := 0, slotOwners(t, c)
	for _, k := range held {
		if r := rows[k]; r != nil && r.State == inspect.StateHeld {
			onOthers++
			if owners[topology.Slot(k)] == c.Shards[0] {
				t.Fatalf("%s is on the paused shard but shown held", k)
			}
		}
	}
	if onOthers < len(held)/2 {
		t.Errorf("only %d held rows from the shards that answered", onOthers)
	}
	if !strings.Contains(findingCodes(m.Findings), "down") {
		t.Errorf("no down finding for the paused shard: %q", findingCodes(m.Findings))
	}
}

func findingCodes(fs []inspect.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Code + " ")
	}
	return b.String()
}

// A slot migrating while the poller reads: rows never double, and a poll that could
// miss keys says so.
func TestPollClusterSlotMigration(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	slot := topology.Slot("lock:{mig}")
	var keys []string
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("lock:{mig}:%d", i))
	}
	plantCluster(t, c, keys, 120000, false)
	var others []string
	for i := range 300 {
		others = append(others, fmt.Sprintf("lock:other:%d", i))
	}
	plantCluster(t, c, others, 120000, false)
	p := newPoller(t, clusterConfig(c, nil))
	check := func(what string) *inspect.Snapshot {
		t.Helper()
		s := p.Poll(context.Background())
		rows := uniqueRows(t, s)
		missing := 0
		for _, k := range append(append([]string(nil), keys...), others...) {
			if rows[k] == nil {
				missing++
			}
		}
		if missing > 0 && s.Complete {
			t.Fatalf("%s: %d keys missing from a poll marked complete", what, missing)
		}
		return s
	}
	to := c.Shards[(c.SlotOwner(slot).Index+1)%3]
	mig := c.BeginMigration(slot, to)
	mig.MoveKeys(keys[:20]...)
	s := check("half moved")
	if s.Complete || !strings.Contains(s.Masters[0].Incomplete, "migrating") {
		t.Errorf("poll during a migration: complete %v, incomplete %q", s.Complete, s.Masters[0].Incomplete)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mig.MoveKeys()
		mig.Finish()
	}()
	for range 3 {
		check("while moving")
	}
	<-done
	s = check("after the migration")
	if !s.Complete || len(s.Resources) != len(keys)+len(others) {
		t.Errorf("after the migration: complete %v (%q), %d rows", s.Complete, s.Masters[0].Incomplete, len(s.Resources))
	}
}

// A fast clock on one shard: its offset is reported on that shard only, and keys on it
// are projected with its rate.
func TestPollClusterShardClock(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{SkewShards: []int{1}})
	c.Shards[1].Master.SetClock(2*time.Second, 1.05)
	p := newPoller(t, clusterConfig(c, nil))
	var s *inspect.Snapshot
	for i := 0; i < 40; i++ {
		s = p.Poll(context.Background())
		if r := s.Masters[0].Shards[1].ClockRatePPM; r != nil && i >= 4 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	sh := s.Masters[0].Shards
	if sh[1].ClockRatePPM == nil || *sh[1].ClockRatePPM < 40000 || *sh[1].ClockRatePPM > 60000 {
		t.Fatalf("skewed shard rate %v, want ~+50000 ppm", sh[1].ClockRatePPM)
	}
	if sh[1].ClockOffsetMs < 1900 || sh[0].ClockOffsetMs > 100 || sh[0].ClockOffsetMs < -100 || sh[2].ClockOffsetMs > 100 {
		t.Errorf("offsets %v %v %v, want ~0, >2000, ~0", sh[0].ClockOffsetMs, sh[1].ClockOffsetMs, sh[2].ClockOffsetMs)
	}
	if !strings.Contains(findingCodes(s.Masters[0].Findings), "clock-rate") || !strings.Contains(findingCodes(sh[1].Findings), "clock-rate") || strings.Contains(findingCodes(sh[0].Findings), "clock-rate") {
		t.Errorf("clock-rate findings: cluster %q, shard 1 %q, shard 0 %q", findingCodes(s.Masters[0].Findings), findingCodes(sh[1].Findings), findingCodes(sh[0].Findings))
	}
	k0, k1 := c.KeyOn(c.Shards[0], "lock:a"), c.KeyOn(c.Shards[1], "lock:b")
	plantCluster(t, c, []string{k0, k1}, 60000, false)
	s = p.Poll(context.Background())
	rows := uniqueRows(t, s)
	v0, v1 := rows[k0].ValidityMs, rows[k1].ValidityMs
	// 60 s on a clock 5% fast last 57.1 s here: about 2.9 s less validity.
	if d := v0 - v1; d < 2000 || d > 3800 {
		t.Errorf("validity on the normal shard %dms, on the fast shard %dms: want ~2900ms less on the fast one", v0, v1)
	}
}

// A cluster seed that is not in cluster mode: a clear error, no rows.
func TestPollClusterSeedNotCluster(t *testing.T) {
	plain := redistest.Start(t, redistest.Options{})
	cfg := config.Default()
	cfg.Masters = []config.MasterConfig{{Name: "c1", Cluster: []string{plain.Addr}}}
	s := newPoller(t, cfg).Poll(context.Background())
	m := s.Masters[0]
	if m.Up || !strings.Contains(m.Error, plain.Addr+" is not in cluster mode") || inspect.ExitCode(s) != 1 {
		t.Errorf("plain seed: up %v error %q exit %d", m.Up, m.Error, inspect.ExitCode(s))
	}
}
