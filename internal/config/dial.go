package config

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/resp"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// Pools dials nothing yet: it returns one pool per master entry with dial, read and
// write timeouts, AUTH and TLS from the config. A plain entry's pool dials its addr; a
// Sentinel group's pool dials the master the sentinels report and ROLE confirms, and
// checks ROLE again on every borrowed connection, so that after a failover it reaches
// the new master; a cluster's pool dials the first seed that answers (a node, not
// the owner of any key: commands on keys must be routed by slot).
func (c *Config) Pools() ([]*redis.Pool, error) {
	pools := make([]*redis.Pool, 0, len(c.Masters))
	timeout := c.Inspect.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	for _, m := range c.Masters {
		dial, err := m.NodeDialer(timeout)
		if err != nil {
			return nil, err
		}
		if !m.TLS {
			dial = plainDialer(dial, timeout)
		}
		p := &redis.Pool{
			MaxIdle:     4,
			IdleTimeout: time.Minute,
			TestOnBorrow: func(conn redis.Conn, idle time.Time) error {
				if time.Since(idle) < 10*time.Second {
					return nil
				}
				_, err := conn.Do("PING")
				return err
			},
		}
		switch m.Kind() {
		case KindSentinel:
			dialS, err := m.SentinelDialer(timeout)
			if err != nil {
				return nil, err
			}
			sentinels, name := m.Sentinels, m.MasterName
			p.DialContext = func(ctx context.Context) (redis.Conn, error) {
				addr, _, err := topology.ResolveMaster(ctx, sentinels, name, dialS, dial)
				if err != nil {
					return nil, err
				}
				return dial(ctx, addr)
			}
			p.TestOnBorrow = func(conn redis.Conn, _ time.Time) error {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				role, err := topology.Role(ctx, conn)
				if err == nil && role != "master" {
					err = fmt.Errorf("ROLE says %s: the group failed over", role)
				}
				return err
			}
		case KindCluster:
			seeds := m.Cluster
			p.DialContext = func(ctx context.Context) (redis.Conn, error) {
				var errs []error
				for _, s := range seeds {
					conn, err := dial(ctx, s)
					if err == nil {
						return conn, nil
					}
					errs = append(errs, fmt.Errorf("%s: %w", s, err))
				}
				return nil, fmt.Errorf("no cluster seed answered: %w", errors.Join(errs...))
			}
		default:
			addr := m.Addr
			p.DialContext = func(ctx context.Context) (redis.Conn, error) { return dial(ctx, addr) }
		}
		pools = append(pools, p)
	}
	return pools, nil
}

// TLSConfig builds the client TLS settings of a master: CA, client certificate, server
// name (from the address when unset) and TLS 1.2 at least.
func (m MasterConfig) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{ServerName: m.TLSServerName, InsecureSkipVerify: m.TLSInsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if tc.ServerName == "" {
		if h, _, ok := strings.Cut(m.Addr, ":"); ok {
			tc.ServerName = h
		}
	}
	if m.TLSCA != "" {
		pem, err := os.ReadFile(m.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca %s: no PEM certificate found", m.TLSCA)
		}
		tc.RootCAs = pool
	}
	if m.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(m.TLSCert, m.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("tls_cert/tls_key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// LockOptions returns the redlock options the [lock] table asks for.
func (c *Config) LockOptions() []redlock.Option {
	opts := []redlock.Option{
		redlock.WithRetries(c.Lock.Retries),
		redlock.WithRetryDelay(c.Lock.RetryDelay),
		redlock.WithDriftFactor(c.Lock.DriftFactor),
		redlock.WithNodeTimeout(c.Lock.NodeTimeout),
	}
	if c.Lock.KeyPrefix != "" {
		opts = append(opts, redlock.WithKeyPrefix(c.Lock.KeyPrefix))
	}
	if c.Lock.Fencing {
		opts = append(opts, redlock.WithFencing())
	}
	if c.Lock.RestartGuard >= 0 {
		opts = append(opts, redlock.WithRestartGuard(c.Lock.RestartGuard))
	}
	return opts
}

// Scrub removes configured secrets from s, so that an error text can be shown, logged
// or audited without one: every run of MinSecretRun or more characters of a password
// (a server may echo a password cut short) and every whole short password become
// "[redacted]", and the arguments a server echoes back from an AUTH or HELLO it refused
// ("... with args beginning with: ...") are dropped.
func (c *Config) Scrub(s string) string {
	if i := strings.Index(s, "with args beginning with:"); i >= 0 {
		if low := strings.ToLower(s[:i]); strings.Contains(low, "'auth'") || strings.Contains(low, "'hello'") {
			s = s[:i] + "with args beginning with: [redacted]"
		}
	}
	for _, m := range c.Masters {
		for _, pw := range []string{m.Password, m.SentinelPassword} {
			switch {
			case len(pw) >= MinSecretRun:
				s = scrubRuns(s, pw)
			case len(pw) >= 3:
				s = strings.ReplaceAll(s, pw, "[redacted]")
			}
		}
	}
	return s
}

// MinSecretRun is the shortest run of a secret's characters that Scrub removes.
const MinSecretRun = 8

// scrubRuns replaces each run of MinSecretRun or more bytes of s that also occurs in
// secret, longest first from the left.
func scrubRuns(s, secret string) string {
	if len(s) < MinSecretRun {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		best := 0
		for j := 0; j < len(secret) && best < len(secret)-j; j++ {
			k := 0
			for i+k < len(s) && j+k < len(secret) && s[i+k] == secret[j+k] {
				k++
			}
			best = max(best, k)
		}
		if best >= MinSecretRun {
			b.WriteString("[redacted]")
			i += best
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// plainDialer reports a plain connection closed before the server's first byte as
// errkind.ClosedAtFirstReply, whether the dial's own AUTH/SELECT or a later command
// met it (see plainConn) -- unless the server is known to speak plain RESP, or went
// away: see plainDial.firstReplyErr.
func plainDialer(dial Dialer, timeout time.Duration) Dialer {
	pd := &plainDial{timeout: timeout}
	return func(ctx context.Context, addr string) (redis.Conn, error) {
		conn, err := dial(ctx, addr)
		if err != nil {
			return nil, pd.firstReplyErr(addr, err)
		}
		return &plainConn{Conn: conn, pd: pd, addr: addr}, nil
	}
}

// plainDial remembers, per address, that a plain connection got a reply.
type plainDial struct {
	timeout  time.Duration
	answered sync.Map // addr -> struct{}
}

// firstReplyErr names a plain connection closed before the server's first byte as what
// it most likely is: a TLS-only server (errkind.ClosedAtFirstReply). It is not one
// when the server already answered plain RESP on another connection, nor when the
// address refuses connections now (the server was killed or went down): such a close
// keeps its own error, of kind closed. A close after the first byte is a
// resp.ClosedError (mid-reply, or between replies), never a TLS hint.
func (pd *plainDial) firstReplyErr(addr string, err error) error {
	var (
		re     redis.Error
		closed *resp.ClosedError
	)
	if err == nil || errors.As(err, &re) || errors.As(err, &closed) || !errkind.IsClosedByPeer(err) {
		return err
	}
	if _, ok := pd.answered.Load(addr); ok {
		return fmt.Errorf("%w (before any reply, from a server that answered plain RESP before: restarted or killed?)", err)
	}
	probe := net.Dialer{Timeout: min(pd.timeout, time.Second)}
	if c, perr := probe.Dial("tcp", addr); perr != nil {
		if errors.Is(perr, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w (before any reply; %s refuses connections now: the server went down)", err, addr)
		}
	} else {
		c.Close()
	}
	return &errkind.ClosedAtFirstReply{Err: err}
}

// plainConn is a connection without TLS that reports a close before the server's first
// reply as errkind.ClosedAtFirstReply (a TLS-only server resets a client that sends
// plain RESP). Every other error and every reply passes through unchanged.
type plainConn struct {
	redis.Conn
	pd       *plainDial
	addr     string
	answered atomic.Bool
}

func (c *plainConn) seen(v any, err error) (any, error) {
	if c.answered.Load() {
		return v, err
	}
	var re redis.Error
	if err == nil || errors.As(err, &re) {
		c.answered.Store(true)
		c.pd.answered.Store(c.addr, struct{}{})
		return v, err
	}
	return v, c.pd.firstReplyErr(c.addr, err)
}

func (c *plainConn) Do(cmd string, args ...any) (any, error) { return c.seen(c.Conn.Do(cmd, args...)) }

func (c *plainConn) Receive() (any, error) { return c.seen(c.Conn.Receive()) }

func (c *plainConn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	return c.seen(redis.DoWithTimeout(c.Conn, d, cmd, args...))
}

func (c *plainConn) ReceiveWithTimeout(d time.Duration) (any, error) {
	return c.seen(redis.ReceiveWithTimeout(c.Conn, d))
}

func (c *plainConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	return c.seen(redis.DoContext(c.Conn, ctx, cmd, args...))
}

func (c *plainConn) ReceiveContext(ctx context.Context) (any, error) {
	return c.seen(redis.ReceiveContext(c.Conn, ctx))
}
