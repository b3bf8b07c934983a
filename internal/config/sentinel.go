package config

import (
	"context"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/resp"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// Dialer opens an authenticated connection to addr, bounded by ctx.
type Dialer = topology.Dialer

// NodeDialer returns a Dialer for the entry's data nodes (a plain master, a Sentinel
// group's master or replicas, a cluster's nodes): AUTH, SELECT db and TLS from the entry,
// reads and writes bounded by timeout.
func (m MasterConfig) NodeDialer(timeout time.Duration) (Dialer, error) {
	opts, err := m.dialOptions(m.Username, m.Password, timeout)
	if err != nil {
		return nil, err
	}
	if m.Kind() != KindCluster {
		opts = append(opts, redis.DialDatabase(m.DB))
	}
	return func(ctx context.Context, addr string) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr, opts...)
	}, nil
}

// SentinelDialer returns a Dialer for the entry's sentinels: sentinel_username and
// sentinel_password, the entry's TLS settings, calls bounded by timeout.
func (m MasterConfig) SentinelDialer(timeout time.Duration) (Dialer, error) {
	opts, err := m.dialOptions(m.SentinelUsername, m.SentinelPassword, timeout)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, addr string) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr, opts...)
	}, nil
}

// dialOptions dials through resp.Dialer: every reply is checked as it arrives (a
// broken or hostile server costs its connection, never the process), with TLS, when
// the entry has it, below the checks. Connect and TLS handshake are bounded by timeout.
func (m MasterConfig) dialOptions(user, password string, timeout time.Duration) ([]redis.DialOption, error) {
	d := resp.Dialer{Limits: resp.DefaultLimits, Timeout: timeout}
	if m.TLS {
		tc, err := m.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("master %s: %w", m.Name, err)
		}
		d.TLSConfig = tc
	}
	opts := []redis.DialOption{
		d.DialOption(),
		redis.DialReadTimeout(timeout),
		redis.DialWriteTimeout(timeout),
	}
	if user != "" {
		opts = append(opts, redis.DialUsername(user))
	}
	if password != "" {
		opts = append(opts, redis.DialPassword(password))
	}
	return opts, nil
}

// Resolve returns the address of the Sentinel group's current master, as
// topology.ResolveMaster finds it: the address the sentinels report that ROLE confirms
// is a master, never an unconfirmed one. The error says what each sentinel did.
func (m MasterConfig) Resolve(ctx context.Context, timeout time.Duration) (string, error) {
	if m.Kind() != KindSentinel {
		return "", fmt.Errorf("master %s: not a Sentinel group", m.Name)
	}
	dialS, err := m.SentinelDialer(timeout)
	if err != nil {
		return "", err
	}
	dialN, err := m.NodeDialer(timeout)
	if err != nil {
		return "", err
	}
	addr, _, err := topology.ResolveMaster(ctx, m.Sentinels, m.MasterName, dialS, dialN)
	return addr, err
}

// Client returns the redlock client for the configured masters with opts (usually
// LockOptions and more): redlock.New over pools (one per entry, as Pools returns them) when
// every entry is a plain server, so plain configs behave exactly as before; else
// redlock.NewInstances, where a Sentinel group follows its current master and a
// cluster routes each key to its shard, both dialled with the entry's AUTH, DB and TLS.
func (c *Config) Client(pools []*redis.Pool, opts ...redlock.Option) (*redlock.Client, error) {
	plain := true
	for _, m := range c.Masters {
		plain = plain && m.Kind() == KindAddr
	}
	if plain {
		return redlock.New(pools, opts...)
	}
	if len(pools) != len(c.Masters) {
		return nil, fmt.Errorf("config: %d pools for %d masters", len(pools), len(c.Masters))
	}
	timeout := c.Inspect.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ins := make([]redlock.Instance, len(c.Masters))
	for i, m := range c.Masters {
		node, err := m.dialOptions(m.Username, m.Password, timeout)
		if err != nil {
			return nil, err
		}
		switch m.Kind() {
		case KindSentinel:
			sent, err := m.dialOptions(m.SentinelUsername, m.SentinelPassword, timeout)
			if err != nil {
				return nil, err
			}
			ins[i].Sentinel = &redlock.Sentinel{Addrs: m.Sentinels, MasterName: m.MasterName,
				SentinelDialOptions: sent, DialOptions: append(node, redis.DialDatabase(m.DB))}
		case KindCluster:
			ins[i].Cluster = &redlock.Cluster{Seeds: m.Cluster, DialOptions: node}
		default:
			ins[i].Pool = pools[i]
		}
	}
	return redlock.NewInstances(ins, opts...)
}
