package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/resp"
)

// Instance is one Redlock instance: exactly one of Pool (a plain master), Sentinel (a
// master/replica group whose master is found through Sentinel) or Cluster (a whole Redis
// Cluster, which counts as ONE instance: each key goes to the shard owning its slot).
type Instance struct {
	Pool     *redis.Pool
	Sentinel *Sentinel
	Cluster  *Cluster
}

// Sentinel describes a master/replica group managed by Redis Sentinel. The client sends
// to the master the sentinels report, after its ROLE confirmed it is a master; it asks
// again when a connection fails, a reply says READONLY, or (every Interval) the
// sentinels report another master, and then moves every connection to the new master.
type Sentinel struct {
	Addrs               []string           // sentinel addresses; all are asked, the most reported master is tried first
	MasterName          string             // the name the sentinels monitor the group by
	SentinelDialOptions []redis.DialOption // dialing a sentinel (AUTH, TLS); the client bounds every call itself
	DialOptions         []redis.DialOption // dialing the master (AUTH, DB, TLS); for TLS with reply checks, a resp.Dialer with TLSConfig
	Interval            time.Duration      // how often the sentinels are asked for a new master (default 1s)
}

// Cluster describes a Redis Cluster used as one Redlock instance. The client discovers
// the shard masters from the seeds (CLUSTER SHARDS, or CLUSTER SLOTS), sends each
// command to the master owning its key's slot, follows MOVED (and refreshes the slot
// map) and ASK (ASKING, then the command, on the target), and pipelines per shard
// connection. Fencing on a cluster needs a hash tag in every key (see WithFencing).
type Cluster struct {
	Seeds       []string           // addresses of some cluster nodes
	DialOptions []redis.DialOption // dialing any node (AUTH, TLS); for TLS with reply checks, a resp.Dialer with TLSConfig
}

// DefaultSentinelInterval is how often a Sentinel instance asks its sentinels whether the
// master changed, when Sentinel.Interval is zero.
const DefaultSentinelInterval = time.Second

// NewInstances returns a Client over instances that may mix plain pools, Sentinel groups
// and clusters (quorum N/2+1 over the instances). It fails when instances is empty, an
// Instance sets none or several of its fields, a pool is given twice, a Sentinel lacks
// addresses or a master name, a Cluster lacks seeds, or an option cannot work. Plain
// pools are dialled on first use, as with New; Sentinel and Cluster instances start
// resolving their masters (and connecting to them) in the background at once.
func NewInstances(instances []Instance, opts ...Option) (*Client, error) {
	if len(instances) == 0 {
		return nil, errors.New("redlock: no instances given")
	}
	seen := map[*redis.Pool]int{}
	for i, in := range instances {
		if err := in.validate(); err != nil {
			return nil, fmt.Errorf("redlock: instance %d: %w", i, err)
		}
		if in.Pool != nil {
			if j, dup := seen[in.Pool]; dup {
				return nil, fmt.Errorf("redlock: instances %d and %d are the same pool: each master must be counted once", j, i)
			}
			seen[in.Pool] = i
		}
	}
	c, err := newClientN(len(instances), opts)
	if err != nil {
		return nil, err
	}
	for i, in := range instances {
		switch {
		case in.Pool != nil:
			c.masters[i] = newMaster(i, poolSource{in.Pool}, nil, &c.opts, c.quit, &c.wg)
		case in.Sentinel != nil:
			s := newSentinelSource(*in.Sentinel, &c.opts, c.quit, &c.wg)
			c.sentinels[i] = s
			m := newMaster(i, s, nil, &c.opts, c.quit, &c.wg)
			m.warm() // resolve and connect now, not within the first caller's node timeout
			c.masters[i] = m
		case in.Cluster != nil:
			c.masters[i] = newCluster(i, *in.Cluster, &c.opts, c.quit, &c.wg)
			c.clusters++
		}
	}
	return c, nil
}

func (in Instance) validate() error {
	n := 0
	for _, set := range []bool{in.Pool != nil, in.Sentinel != nil, in.Cluster != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("exactly one of Pool, Sentinel and Cluster must be set (%d are)", n)
	}
	switch {
	case in.Sentinel != nil && len(in.Sentinel.Addrs) == 0:
		return errors.New("Sentinel without addresses")
	case in.Sentinel != nil && in.Sentinel.MasterName == "":
		return errors.New("Sentinel without a master name")
	case in.Sentinel != nil && in.Sentinel.Interval < 0:
		return fmt.Errorf("Sentinel interval %v: must be >= 0", in.Sentinel.Interval)
	case in.Cluster != nil && len(in.Cluster.Seeds) == 0:
		return errors.New("Cluster without seed addresses")
	}
	return nil
}

// ResolvedAddr returns the address instance i (in the order given to NewInstances)
// currently sends to, when that is one address: the confirmed master of a Sentinel
// instance ("" before the first resolution succeeded). It returns "" for a pool (its
// address is the pool's business) and for a cluster (each key goes to its shard).
func (c *Client) ResolvedAddr(i int) string {
	if s := c.sentinels[i]; s != nil {
		return s.addr()
	}
	return ""
}

// instance is where the commands for one Redlock instance go.
type instance interface {
	// submit queues c for key without blocking; exactly one reply is delivered.
	submit(key string, c *call)
}

// source gives a pipe its connections.
type source interface {
	// get returns a new connection and the epoch it belongs to, bounded by ctx.
	get(ctx context.Context) (redis.Conn, uint64, error)
	// current reports whether connections of epoch may still be used; when not, the
	// pipe replaces its connection before sending more.
	current(epoch uint64) bool
	// failed says a connection broke or a reply came from a replica: where to send
	// may have changed.
	failed()
}

// poolSource takes connections from a caller's pool: one fixed master.
type poolSource struct{ pool *redis.Pool }

func (s poolSource) get(ctx context.Context) (redis.Conn, uint64, error) {
	conn, err := s.pool.GetContext(ctx)
	return conn, 0, err
}

func (poolSource) current(uint64) bool { return true }
func (poolSource) failed()             {}

// errRetired ends a connection to a master that is no longer the one to use.
var errRetired = errors.New("master changed: connection retired")

// dialOptions puts the reply checks (resp.Dialer with resp.DefaultLimits: a broken or
// hostile server costs its connection, not the process) and the client's backstop
// timeouts before the caller's options, which may override them: a resp.Dialer of the
// caller's (other limits, TLS below the checks) replaces this one, and redis.DialUseTLS
// leaves its connections unchecked. Every call is bounded by the pipes' own timers
// anyway.
func dialOptions(o *options, caller []redis.DialOption) []redis.DialOption {
	opts := []redis.DialOption{resp.Dialer{}.DialOption(), redis.DialWriteTimeout(o.stall), redis.DialReadTimeout(o.stall)}
	return append(opts, caller...)
}
