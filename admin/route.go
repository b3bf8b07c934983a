package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// observeEntry reads key where the entry keeps it: a plain master through its pool; a
// Sentinel group on the master the sentinels report and ROLE confirms; a cluster on the
// shard master owning the key's slot (following one MOVED or ASK). It returns the
// address read ("" for a plain master: its configured address).
func observeEntry(ctx context.Context, m config.MasterConfig, timeout time.Duration, pool *redis.Pool, key string) (inspect.Node, time.Duration, string, error) {
	t0 := time.Now()
	none := inspect.Node{PTTLMs: -2, Type: "none"}
	var addr string
	var err error
	switch m.Kind() {
	case config.KindSentinel:
		addr, err = m.Resolve(ctx, timeout)
	case config.KindCluster:
		addr, err = shardOf(ctx, m, timeout, key)
	default:
		n, rtt, err := observeNode(ctx, pool, key)
		return n, rtt, "", err
	}
	if err != nil {
		return none, 0, "", err
	}
	dial, err := m.NodeDialer(timeout)
	if err != nil {
		return none, 0, addr, err
	}
	for hop := 0; ; hop++ {
		conn, err := dial(ctx, addr)
		if err != nil {
			return none, 0, addr, err
		}
		n, rtt, err := observeConn(ctx, conn, key, t0)
		conn.Close()
		var re redis.Error
		if hop == 0 && m.Kind() == config.KindCluster && errors.As(err, &re) {
			if f := strings.Fields(string(re)); len(f) == 3 && (f[0] == "MOVED" || f[0] == "ASK") {
				if addr = f[2]; f[0] == "ASK" {
					return observeAsking(ctx, dial, addr, key, t0)
				}
				continue // MOVED: the slot map changed since discovery
			}
		}
		return n, rtt, addr, err
	}
}

// observeAsking reads key on the target of an ASK redirection (a slot being migrated):
// ASKING, then the reads, on one connection.
func observeAsking(ctx context.Context, dial config.Dialer, addr, key string, t0 time.Time) (inspect.Node, time.Duration, string, error) {
	conn, err := dial(ctx, addr)
	if err != nil {
		return inspect.Node{PTTLMs: -2, Type: "none"}, 0, addr, err
	}
	defer conn.Close()
	// ASKING holds for one command only: askingConn sends it before each read.
	n, rtt, err := observeConn(ctx, askingConn{conn}, key, t0)
	return n, rtt, addr, err
}

// askingConn sends ASKING before every command (read-only: it only lets the next
// command reach a slot being imported).
type askingConn struct{ redis.Conn }

func (c askingConn) Do(cmd string, args ...any) (any, error) {
	if _, err := c.Conn.Do("ASKING"); err != nil {
		return nil, err
	}
	return c.Conn.Do(cmd, args...)
}

func (c askingConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	if _, err := redis.DoContext(c.Conn, ctx, "ASKING"); err != nil {
		return nil, err
	}
	return redis.DoContext(c.Conn, ctx, cmd, args...)
}

// Send queues ASKING before cmd; Receive and ReceiveContext take ASKING's reply off
// before the command's.
func (c askingConn) Send(cmd string, args ...any) error {
	if err := c.Conn.Send("ASKING"); err != nil {
		return err
	}
	return c.Conn.Send(cmd, args...)
}

func (c askingConn) Receive() (any, error) {
	if _, err := c.Conn.Receive(); err != nil {
		return nil, err
	}
	return c.Conn.Receive()
}

func (c askingConn) ReceiveContext(ctx context.Context) (any, error) {
	if _, err := redis.ReceiveContext(c.Conn, ctx); err != nil {
		return nil, err
	}
	return redis.ReceiveContext(c.Conn, ctx)
}

// shardOf returns the address of the shard master that owns key's slot.
func shardOf(ctx context.Context, m config.MasterConfig, timeout time.Duration, key string) (string, error) {
	dial, err := m.NodeDialer(timeout)
	if err != nil {
		return "", err
	}
	shards, err := topology.Discover(ctx, dial, m.Cluster)
	if err != nil {
		return "", err
	}
	slot := topology.Slot(key)
	if owner := topology.Owners(shards)[slot]; owner != "" {
		if _, _, err := net.SplitHostPort(owner); err == nil {
			return owner, nil
		}
	}
	return "", fmt.Errorf("slot %d of %q is served by no shard", slot, key)
}
