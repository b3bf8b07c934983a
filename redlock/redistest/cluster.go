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

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// ClusterOptions configures a Redis Cluster. The zero value is three shard masters
// without replicas, a 2 s cluster-node-timeout, and cluster-require-full-coverage no,
// so that the other shards keep serving while one is down (Redis's own default is yes).
type ClusterOptions struct {
	Shards       int           // shard masters (default 3)
	Replicas     int           // replicas per shard (default 0)
	Node         Options       // options of every node; Password is also masterauth and MIGRATE's AUTH
	SkewShards   []int         // shards (indexes) whose nodes run under the clock shim: Shard.Master.SetClock
	NodeTimeout  time.Duration // cluster-node-timeout (default 2s)
	FullCoverage bool          // cluster-require-full-coverage yes: a shard down takes the cluster down
}

// Cluster is a Redis Cluster of real redis-server processes, created with CLUSTER
// ADDSLOTSRANGE, MEET and REPLICATE (what redis-cli --cluster create does, without its
// fixed waits). All nodes are stopped by t.Cleanup.
type Cluster struct {
	Shards []*Shard // in slot order: Shards[0] started with the lowest slots

	t    testing.TB
	opts ClusterOptions
}

// Shard is one master of a cluster with its replicas. Pause, Resume, Kill and Restart
// the shard's master through Master.
type Shard struct {
	ID       string    // the master's cluster node id
	Master   *Server   // the shard's master
	Replicas []*Server // its replicas
	Index    int       // position in Cluster.Shards
}

// StartCluster starts the nodes, assigns the slots in equal ranges, joins the nodes and
// returns once every node reports cluster_state:ok, knows every other node, and every
// replica's link is up.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if o.Shards <= 0 {
		o.Shards = 3
	}
	if o.Replicas < 0 {
		o.Replicas = 0
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 2 * time.Second
	}
	c := &Cluster{t: t, opts: o}
	coverage := "no"
	if o.FullCoverage {
		coverage = "yes"
	}
	var all []*Server
	for i := 0; i < o.Shards; i++ {
		no := o.Node
		no.Config = append(append([]string(nil), o.Node.Config...),
			fmt.Sprintf("cluster-node-timeout %d", o.NodeTimeout.Milliseconds()),
			"cluster-require-full-coverage "+coverage)
		for _, s := range o.SkewShards {
			if s == i {
				no.Skew = true
			}
		}
		sh := &Shard{Index: i, Master: start(t, no, roleCluster)}
		for r := 0; r < o.Replicas; r++ {
			sh.Replicas = append(sh.Replicas, start(t, no, roleCluster))
		}
		c.Shards = append(c.Shards, sh)
		all = append(all, sh.Master)
		all = append(all, sh.Replicas...)
	}
	for i, sh := range c.Shards {
		id, err := redis.String(sh.Master.Do("CLUSTER", "MYID"))
		if err != nil {
			t.Fatalf("redistest: CLUSTER MYID on %s: %v", sh.Master.Addr, err)
		}
		sh.ID = id
		lo, hi := i*ClusterSlots/o.Shards, (i+1)*ClusterSlots/o.Shards-1
		c.must(sh.Master, "CLUSTER", "SET-CONFIG-EPOCH", i+1)
		c.must(sh.Master, "CLUSTER", "ADDSLOTSRANGE", lo, hi)
	}
	first := all[0]
	for _, n := range all[1:] {
		c.must(n, "CLUSTER", "MEET", "127.0.0.1", first.port, first.bus)
	}
	waitFor(t, 20*time.Second, "cluster nodes to meet", func() error {
		for _, n := range all {
			nodes, err := redis.String(n.Do("CLUSTER", "NODES"))
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSpace(nodes), "\n")
			if len(lines) != len(all) || strings.Contains(nodes, "handshake") || strings.Contains(nodes, "noaddr") {
				return fmt.Errorf("%s knows %d of %d nodes", n.Addr, len(lines), len(all))
			}
		}
		return nil
	})
	for _, sh := range c.Shards {
		for _, r := range sh.Replicas {
			c.must(r, "CLUSTER", "REPLICATE", sh.ID)
		}
	}
	waitFor(t, 20*time.Second, "every node to see the replicas as replicas", func() error {
		for _, n := range all {
			nodes, err := redis.String(n.Do("CLUSTER", "NODES"))
			if err != nil {
				return err
			}
			masters := 0
			for _, l := range strings.Split(strings.TrimSpace(nodes), "\n") {
				if f := strings.Fields(l); len(f) > 2 && strings.Contains(f[2], "master") {
					masters++
				}
			}
			if masters != o.Shards {
				return fmt.Errorf("%s sees %d masters", n.Addr, masters)
			}
		}
		return nil
	})
	c.WaitOK(30 * time.Second)
	for _, sh := range c.Shards {
		for _, r := range sh.Replicas {
			waitFor(t, 20*time.Second, "replica "+r.Addr+" in sync", func() error { return linkUp(r) })
		}
	}
	return c
}

// must runs a command on s and fails the test on an error.
func (c *Cluster) must(s *Server, cmd string, args ...any) any {
	c.t.Helper()
	v, err := s.Do(cmd, args...)
	if err != nil {
		c.t.Fatalf("redistest: %s %v on %s: %v", cmd, args, s.Addr, err)
	}
	return v
}

// WaitOK waits up to timeout until every running node reports cluster_state:ok and
// all running masters report the same slot owners.
func (c *Cluster) WaitOK(timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, timeout, "cluster_state:ok", func() error {
		var want string
		for _, n := range c.Nodes() {
			if !n.running() {
				continue
			}
			info, err := redis.String(n.Do("CLUSTER", "INFO"))
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: cluster state not ok", n.Addr)
			}
			owners, err := slotOwners(n)
			if err != nil {
				return err
			}
			if got := fmt.Sprint(owners); want == "" {
				want = got
			} else if got != want {
				return fmt.Errorf("%s sees slot owners %s; another node %s", n.Addr, got, want)
			}
		}
		return nil
	})
}

// Seeds returns the shard masters' addresses, in shard order: the seed list a cluster
// client starts from.
func (c *Cluster) Seeds() []string {
	addrs := make([]string, len(c.Shards))
	for i, sh := range c.Shards {
		addrs[i] = sh.Master.Addr
	}
	return addrs
}

// Nodes returns every node, masters and replicas.
func (c *Cluster) Nodes() []*Server {
	var out []*Server
	for _, sh := range c.Shards {
		out = append(out, sh.Master)
		out = append(out, sh.Replicas...)
	}
	return out
}

// SlotOwner returns the shard that owns slot according to the first running,
// unpaused master (after Migration.Finish, every master agrees).
func (c *Cluster) SlotOwner(slot int) *Shard {
	c.t.Helper()
	owners := c.owners()
	for _, sh := range c.Shards {
		if owners[slot] == sh.Master.Addr {
			return sh
		}
	}
	c.t.Fatalf("redistest: slot %d has no known owner (%q)", slot, owners[slot])
	return nil
}

// ShardOf returns the shard that owns key's slot.
func (c *Cluster) ShardOf(key string) *Shard {
	c.t.Helper()
	return c.SlotOwner(Slot(key))
}

// KeyOn returns the first of prefix+"0", prefix+"1", ... whose slot sh owns.
func (c *Cluster) KeyOn(sh *Shard, prefix string) string {
	c.t.Helper()
	owners := c.owners()
	for i := 0; i < 100000; i++ {
		k := prefix + strconv.Itoa(i)
		if owners[Slot(k)] == sh.Master.Addr {
			return k
		}
	}
	c.t.Fatalf("redistest: no key %s<n> on shard %d", prefix, sh.Index)
	return ""
}

// KeyInSlot returns the first of prefix+"0", prefix+"1", ... that hashes to slot.
func KeyInSlot(slot int, prefix string) string {
	for i := 0; ; i++ {
		if k := prefix + strconv.Itoa(i); Slot(k) == slot {
			return k
		}
	}
}

// owners maps each slot to its owner's address, as the first reachable master sees it.
func (c *Cluster) owners() []string {
	c.t.Helper()
	var last error
	for _, sh := range c.Shards {
		if !sh.Master.running() {
			continue
		}
		o, err := slotOwners(sh.Master)
		if err == nil {
			return o
		}
		last = err
	}
	c.t.Fatalf("redistest: no running master answers CLUSTER SLOTS: %v", last)
	return nil
}

// slotOwners reads CLUSTER SLOTS from n: the master address of every slot ("" if none).
func slotOwners(n *Server) ([]string, error) {
	v, err := redis.Values(n.Do("CLUSTER", "SLOTS"))
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS on %s: %v", n.Addr, err)
	}
	owners := make([]string, ClusterSlots)
	for _, r := range v {
		rng, _ := redis.Values(r, nil)
		if len(rng) < 3 {
			continue
		}
		lo, _ := redis.Int(rng[0], nil)
		hi, _ := redis.Int(rng[1], nil)
		m, _ := redis.Values(rng[2], nil)
		if len(m) < 2 {
			continue
		}
		host, _ := redis.String(m[0], nil)
		port, _ := redis.Int(m[1], nil)
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		for s := lo; s <= hi && s < ClusterSlots; s++ {
			owners[s] = addr
		}
	}
	return owners, nil
}

// Migration is a slot being moved from one shard to another: between BeginMigration
// and Finish, the source answers ASK for keys it no longer has, and the target
// serves them only after ASKING.
type Migration struct {
	Slot     int
	From, To *Shard
	c        *Cluster
}

// MigrateSlot moves slot, with its keys, to shard to (BeginMigration, MoveKeys, Finish).
func (c *Cluster) MigrateSlot(slot int, to *Shard) {
	c.t.Helper()
	m := c.BeginMigration(slot, to)
	m.MoveKeys()
	m.Finish()
}

// BeginMigration marks slot IMPORTING on to and MIGRATING on its current owner.
func (c *Cluster) BeginMigration(slot int, to *Shard) *Migration {
	c.t.Helper()
	from := c.SlotOwner(slot)
	if from == to {
		c.t.Fatalf("redistest: slot %d is already on shard %d", slot, to.Index)
	}
	c.must(to.Master, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID)
	c.must(from.Master, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID)
	return &Migration{Slot: slot, From: from, To: to, c: c}
}

// MoveKeys MIGRATEs the given keys of the slot to the target (all of the slot's keys
// when none are given); keys not on the source are skipped.
func (m *Migration) MoveKeys(keys ...string) {
	c := m.c
	c.t.Helper()
	if len(keys) > 0 {
		m.migrate(keys)
		return
	}
	for {
		ks, err := redis.Strings(m.From.Master.Do("CLUSTER", "GETKEYSINSLOT", m.Slot, 100))
		if err != nil {
			c.t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", m.Slot, m.From.Master.Addr, err)
		}
		if len(ks) == 0 {
			return
		}
		m.migrate(ks)
	}
}

func (m *Migration) migrate(keys []string) {
	c := m.c
	c.t.Helper()
	host, port, _ := net.SplitHostPort(m.To.Master.Addr)
	args := []any{host, port, "", 0, 5000}
	if pw := c.opts.Node.Password; pw != "" {
		args = append(args, "AUTH", pw)
	}
	args = append(args, "KEYS")
	for _, k := range keys {
		args = append(args, k)
	}
	c.must(m.From.Master, "MIGRATE", args...)
}

// Finish assigns the slot to the target on the target, the source and every other
// running master (CLUSTER SETSLOT NODE), so all masters agree at once.
func (m *Migration) Finish() {
	c := m.c
	c.t.Helper()
	c.must(m.To.Master, "CLUSTER", "SETSLOT", m.Slot, "NODE", m.To.ID)
	c.must(m.From.Master, "CLUSTER", "SETSLOT", m.Slot, "NODE", m.To.ID)
	for _, sh := range c.Shards {
		if sh != m.To && sh != m.From && sh.Master.running() {
			c.must(sh.Master, "CLUSTER", "SETSLOT", m.Slot, "NODE", m.To.ID)
		}
	}
}

// Slot returns the cluster hash slot of key: CRC16 (XMODEM) of the key, or of its hash
// tag (the part between the first "{" and the next "}", when not empty), mod 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % ClusterSlots
}
