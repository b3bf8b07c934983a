package resp

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Dialer dials a Redis server and returns its connection checked by a Conn, with TLS
// (when TLSConfig is set) below the checks. Its DialOption installs it in redigo.
type Dialer struct {
	Limits    Limits        // zero fields: defaults (DefaultLimits)
	TLSConfig *tls.Config   // nil: plain TCP; ServerName defaults to the address's host
	Timeout   time.Duration // bounds the connect and the TLS handshake, besides ctx (0: DefaultDialTimeout)
	KeepAlive time.Duration // TCP keep-alive period (0: Go's default, 15 s)
}

// DefaultDialTimeout bounds a Dialer's connect and TLS handshake when its Timeout is
// zero: redigo's own default connect timeout.
const DefaultDialTimeout = 30 * time.Second

// DialContext connects to addr, bounded by ctx and d.Timeout.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nd := net.Dialer{KeepAlive: d.KeepAlive}
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if d.TLSConfig != nil {
		tc := d.TLSConfig.Clone()
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				tc.ServerName = host
			}
		}
		tconn := tls.Client(nc, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, &TLSHandshakeError{Err: err}
		}
		nc = tconn
	}
	return NewConn(nc, d.Limits), nil
}

// DialOption returns the redigo option that dials with d (redis.DialContextFunc). It
// replaces redigo's own dialer, so redis.DialConnectTimeout and DialKeepAlive no
// longer apply (use d.Timeout and d.KeepAlive), and TLS must be d.TLSConfig, not
// redis.DialUseTLS: redigo would put its TLS above the checks, which then stand aside.
// Put it before the caller's options, which may replace it with a dialer of their own.
func (d Dialer) DialOption() redis.DialOption { return redis.DialContextFunc(d.DialContext) }

// TLSHandshakeError is a TLS handshake that failed or did not finish in time (as a TLS
// client at a plain-text port does: the server waits for a command that never comes).
type TLSHandshakeError struct{ Err error }

// Error says "TLS handshake: " and why it failed.
func (e *TLSHandshakeError) Error() string { return "TLS handshake: " + e.Err.Error() }

// Unwrap returns the handshake's error.
func (e *TLSHandshakeError) Unwrap() error { return e.Err }
