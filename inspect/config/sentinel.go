package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Dialer opens an authenticated connection to addr, bounded by ctx.
type Dialer func(ctx context.Context, addr string) (redis.Conn, error)

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

func (m MasterConfig) dialOptions(user, password string, timeout time.Duration) ([]redis.DialOption, error) {
	opts := []redis.DialOption{
		redis.DialConnectTimeout(timeout),
		redis.DialReadTimeout(timeout),
		redis.DialWriteTimeout(timeout),
	}
	if user != "" {
		opts = append(opts, redis.DialUsername(user))
	}
	if password != "" {
		opts = append(opts, redis.DialPassword(password))
	}
	if m.TLS {
		tc, err := m.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("master %s: %w", m.Name, err)
		}
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(tc), redis.DialTLSSkipVerify(m.TLSInsecureSkipVerify))
	}
	return opts, nil
}

// Resolve returns the address of the Sentinel group's current master: it asks every
// sentinel at once (SENTINEL GET-MASTER-ADDR-BY-NAME), then tries the reported addresses,
// most reported first, and returns the first whose ROLE says master. An address no ROLE
// confirmed is never returned; the error says what each sentinel and candidate did.
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
	return resolveMaster(ctx, m.Sentinels, m.MasterName, dialS, dialN)
}

func resolveMaster(ctx context.Context, sentinels []string, name string, dialS, dialN Dialer) (string, error) {
	type answer struct {
		addr string
		err  error
	}
	answers := make([]answer, len(sentinels))
	var wg sync.WaitGroup
	for i, s := range sentinels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].addr, answers[i].err = askSentinel(ctx, dialS, s, name)
		}()
	}
	wg.Wait()
	votes := map[string]int{}
	var order, why []string
	for i, a := range answers {
		if a.err != nil {
			why = append(why, fmt.Sprintf("sentinel %s: %v", sentinels[i], a.err))
			continue
		}
		if votes[a.addr] == 0 {
			order = append(order, a.addr)
		}
		votes[a.addr]++
	}
	sort.SliceStable(order, func(i, j int) bool { return votes[order[i]] > votes[order[j]] })
	for _, addr := range order {
		role, err := roleOf(ctx, dialN, addr)
		if err == nil && role == "master" {
			return addr, nil
		}
		if err == nil {
			err = fmt.Errorf("ROLE says %s", role)
		}
		why = append(why, fmt.Sprintf("%s (reported by %d): %v", addr, votes[addr], err))
	}
	return "", fmt.Errorf("sentinel group %q: no confirmed master: %s", name, strings.Join(why, "; "))
}

func askSentinel(ctx context.Context, dial Dialer, sentinel, name string) (string, error) {
	conn, err := dial(ctx, sentinel)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	v, err := redis.Strings(redis.DoContext(conn, ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name))
	if errors.Is(err, redis.ErrNil) || (err == nil && len(v) == 0) {
		return "", errors.New("does not monitor this master name")
	}
	if err != nil {
		return "", err
	}
	if len(v) != 2 {
		return "", fmt.Errorf("unexpected reply %q", v)
	}
	return net.JoinHostPort(v[0], v[1]), nil
}

// roleOf returns the first element of ROLE on addr ("master", "slave", "sentinel").
func roleOf(ctx context.Context, dial Dialer, addr string) (string, error) {
	conn, err := dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return Role(ctx, conn)
}

// Role returns the first element of ROLE on conn: "master", "slave" or "sentinel".
func Role(ctx context.Context, conn redis.Conn) (string, error) {
	v, err := redis.Values(redis.DoContext(conn, ctx, "ROLE"))
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", errors.New("empty ROLE reply")
	}
	return redis.String(v[0], nil)
}
