package config

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
)

// Pools dials nothing yet: it returns one pool per master with dial, read and write
// timeouts, AUTH and TLS from the config.
func (c *Config) Pools() ([]*redis.Pool, error) {
	pools := make([]*redis.Pool, 0, len(c.Masters))
	timeout := c.Inspect.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	for _, m := range c.Masters {
		opts := []redis.DialOption{
			redis.DialConnectTimeout(timeout),
			redis.DialReadTimeout(timeout),
			redis.DialWriteTimeout(timeout),
			redis.DialDatabase(m.DB),
		}
		if m.Username != "" {
			opts = append(opts, redis.DialUsername(m.Username))
		}
		if m.Password != "" {
			opts = append(opts, redis.DialPassword(m.Password))
		}
		if m.TLS {
			tc, err := m.TLSConfig()
			if err != nil {
				return nil, fmt.Errorf("master %s: %w", m.Name, err)
			}
			opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(tc), redis.DialTLSSkipVerify(m.TLSInsecureSkipVerify))
		}
		addr := m.Addr
		pools = append(pools, &redis.Pool{
			MaxIdle:     4,
			IdleTimeout: time.Minute,
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr, opts...)
			},
			TestOnBorrow: func(conn redis.Conn, idle time.Time) error {
				if time.Since(idle) < 10*time.Second {
					return nil
				}
				_, err := conn.Do("PING")
				return err
			},
		})
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
	return opts
}

// Scrub replaces every configured password in s with "[redacted]", so that an error
// text can be shown, logged or audited without a secret in it.
func (c *Config) Scrub(s string) string {
	for _, m := range c.Masters {
		if len(m.Password) >= 3 {
			s = strings.ReplaceAll(s, m.Password, "[redacted]")
		}
	}
	return s
}
