package topology

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Shard is one master of a Redis Cluster with the slots it serves.
type Shard struct {
	Master   string   // host:port of the shard's master
	ID       string   // the master's node id
	Replicas []string // host:port of its replicas not known to have failed (CLUSTER SLOTS also leaves out those that never replicated)
	Slots    [][2]int // inclusive slot ranges, ascending
}

// ErrNotCluster is wrapped by Shards when the server is not in cluster mode.
var ErrNotCluster = errors.New("not a cluster node (cluster support disabled)")

// Shards reads the cluster's shard masters from one node with CLUSTER SHARDS (Redis 7),
// falling back to CLUSTER SLOTS on older servers. Shards come sorted by their first
// slot (shards without slots last, by address). A node without cluster support gives an
// error wrapping ErrNotCluster.
func Shards(ctx context.Context, conn redis.Conn) ([]Shard, error) {
	v, err := redis.Values(redis.DoContext(conn, ctx, "CLUSTER", "SHARDS"))
	var shards []Shard
	switch {
	case err == nil:
		shards, err = parseShards(v)
	case isNotCluster(err):
		return nil, fmt.Errorf("%w: %v", ErrNotCluster, err)
	case isUnknownCommand(err):
		v, err = redis.Values(redis.DoContext(conn, ctx, "CLUSTER", "SLOTS"))
		if err != nil {
			if isNotCluster(err) {
				return nil, fmt.Errorf("%w: %v", ErrNotCluster, err)
			}
			return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
		}
		shards, err = parseSlots(v)
	default:
		return nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(shards, func(i, j int) bool {
		a, b := shards[i], shards[j]
		if len(a.Slots) == 0 || len(b.Slots) == 0 {
			if len(a.Slots) != len(b.Slots) {
				return len(a.Slots) > 0
			}
			return a.Master < b.Master
		}
		return a.Slots[0][0] < b.Slots[0][0]
	})
	return shards, nil
}

// Discover asks the seeds in order and returns the shards of the first that answers.
// The error names every seed and why it did not answer; it wraps ErrNotCluster when a
// seed answered that it is not in cluster mode.
func Discover(ctx context.Context, dial Dialer, seeds []string) ([]Shard, error) {
	if len(seeds) == 0 {
		return nil, errors.New("cluster: no seed addresses given")
	}
	var errs []error
	for _, s := range seeds {
		shards, err := discoverFrom(ctx, dial, s)
		if err == nil {
			return shards, nil
		}
		errs = append(errs, fmt.Errorf("seed %s: %w", s, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("cluster: no seed answered: %w", errors.Join(errs...))
}

func discoverFrom(ctx context.Context, dial Dialer, seed string) ([]Shard, error) {
	conn, err := dial(ctx, seed)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	shards, err := Shards(ctx, conn)
	if err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, errors.New("the cluster has no master")
	}
	return shards, nil
}

// Owners maps every slot to the address of its shard master ("" for a slot no shard
// serves).
func Owners(shards []Shard) []string {
	owners := make([]string, Slots)
	for _, sh := range shards {
		for _, r := range sh.Slots {
			for s := max(r[0], 0); s <= r[1] && s < Slots; s++ {
				owners[s] = sh.Master
			}
		}
	}
	return owners
}

func isNotCluster(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(string(re), "cluster support disabled")
}

func isUnknownCommand(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && (strings.Contains(string(re), "unknown subcommand") || strings.Contains(string(re), "unknown command"))
}

// parseShards reads CLUSTER SHARDS: per shard a map with "slots" (flat start/end
// pairs) and "nodes" (maps with id, ip, port or tls-port, role, health).
func parseShards(v []any) ([]Shard, error) {
	var shards []Shard
	for _, raw := range v {
		m, err := flatMap(raw)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
		}
		var sh Shard
		slots, _ := redis.Ints(m["slots"], nil)
		for i := 0; i+1 < len(slots); i += 2 {
			sh.Slots = append(sh.Slots, [2]int{slots[i], slots[i+1]})
		}
		nodes, _ := redis.Values(m["nodes"], nil)
		for _, rn := range nodes {
			n, err := flatMap(rn)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER SHARDS node: %w", err)
			}
			ip, _ := redis.String(n["ip"], nil)
			port, err := redis.Int(n["port"], nil)
			if err != nil {
				port, _ = redis.Int(n["tls-port"], nil)
			}
			addr := net.JoinHostPort(ip, strconv.Itoa(port))
			role, _ := redis.String(n["role"], nil)
			health, _ := redis.String(n["health"], nil)
			id, _ := redis.String(n["id"], nil)
			switch {
			case role == "master" && (sh.Master == "" || health == "online"):
				sh.Master, sh.ID = addr, id
			case role == "replica" && health != "failed":
				sh.Replicas = append(sh.Replicas, addr)
			}
		}
		if sh.Master != "" {
			shards = append(shards, sh)
		}
	}
	return shards, nil
}

// parseSlots reads CLUSTER SLOTS: per range start, end, master [ip, port, id, ...],
// then replicas; ranges of one master are merged into one Shard.
func parseSlots(v []any) ([]Shard, error) {
	byMaster := map[string]*Shard{}
	var order []string
	for _, raw := range v {
		r, err := redis.Values(raw, nil)
		if err != nil || len(r) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS: unexpected entry %v", raw)
		}
		lo, _ := redis.Int(r[0], nil)
		hi, _ := redis.Int(r[1], nil)
		var addrs []string
		var masterID string
		for k, rn := range r[2:] {
			n, err := redis.Values(rn, nil)
			if err != nil || len(n) < 2 {
				return nil, fmt.Errorf("CLUSTER SLOTS: unexpected node %v", rn)
			}
			ip, _ := redis.String(n[0], nil)
			port, _ := redis.Int(n[1], nil)
			addrs = append(addrs, net.JoinHostPort(ip, strconv.Itoa(port)))
			if k == 0 && len(n) > 2 {
				masterID, _ = redis.String(n[2], nil)
			}
		}
		sh := byMaster[addrs[0]]
		if sh == nil {
			sh = &Shard{Master: addrs[0], ID: masterID, Replicas: addrs[1:]}
			byMaster[addrs[0]] = sh
			order = append(order, addrs[0])
		}
		sh.Slots = append(sh.Slots, [2]int{lo, hi})
	}
	shards := make([]Shard, 0, len(order))
	for _, a := range order {
		sh := byMaster[a]
		sort.Slice(sh.Slots, func(i, j int) bool { return sh.Slots[i][0] < sh.Slots[j][0] })
		shards = append(shards, *sh)
	}
	return shards, nil
}

// flatMap reads a RESP2 map (flat key, value, key, value array) into a Go map.
func flatMap(raw any) (map[string]any, error) {
	a, err := redis.Values(raw, nil)
	if err != nil {
		return nil, err
	}
	if len(a)%2 != 0 {
		return nil, fmt.Errorf("odd-length map reply (%d elements)", len(a))
	}
	m := make(map[string]any, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		k, err := redis.String(a[i], nil)
		if err != nil {
			return nil, err
		}
		m[k] = a[i+1]
	}
	return m, nil
}
