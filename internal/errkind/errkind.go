// Package errkind names why a master could not be used: one classification of
// connection and command errors (auth, tls, refused, timeout, dns, protocol, closed,
// other)
// shared by the poller, the admin actions, the reports and the console, each kind with
// a one-line hint of what to check. It only looks at error values and texts: it never
// dials, never logs, and never adds anything to a message (scrubbing secrets is the
// caller's, with config.Config.Scrub, before a message is shown).
package errkind

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/resp"
)

// Kind is the class of a master error. The zero Kind means "no error"; its JSON form
// is the name ("auth", "tls", ...), and omitempty leaves it out when there is none.
type Kind uint8

// The kinds, from the most specific to the catch-all.
const (
	None     Kind = iota // no error
	Auth                 // wrong or missing password, unknown user, ACL refusal
	TLS                  // TLS on one side only, handshake or certificate failure
	Refused              // nothing listens at the address (connection refused)
	Timeout              // no answer in time: a paused, overloaded or unreachable server
	DNS                  // the host name does not resolve
	Protocol             // a malformed reply: broken framing, a length that overflows or is over a limit, a reply that never ends
	Closed               // the server closed or reset the connection (after answering, or when it went down)
	Other                // anything else (server errors such as READONLY)
)

var names = [...]string{None: "", Auth: "auth", TLS: "tls", Refused: "refused", Timeout: "timeout", DNS: "dns", Protocol: "protocol", Closed: "closed", Other: "other"}

// String returns the kind's stable name ("" for None).
func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return "other"
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name; an unknown name is Other.
func (k *Kind) UnmarshalText(b []byte) error {
	*k = Other
	for i, n := range names {
		if n == string(b) {
			*k = Kind(i)
		}
	}
	return nil
}

// Hint returns one line saying what to check for this kind ("" for None).
func (k Kind) Hint() string {
	switch k {
	case None:
		return ""
	case Auth:
		return "check password_env / ACL user"
	case TLS:
		return "check tls (on for a TLS port), tls_ca, tls_cert/tls_key, tls_server_name"
	case Refused:
		return "check that redis-server runs and listens on addr"
	case Timeout:
		return "check that the server is not paused, overloaded or firewalled"
	case DNS:
		return "check the host name in addr and this host's DNS"
	case Protocol:
		return "the server sent a malformed reply: check that addr is a Redis server (not another service) and that nothing between rewrites its replies"
	case Closed:
		return "the server closed or reset the connection: check its log for a crash, kill or restart, and its maxclients, timeout and client-output-buffer-limit"
	}
	return "check the server's log and the message"
}

// ClosedAtFirstReply is the error of a plain (non-TLS) connection that the server
// closed or reset before sending a single reply, as a TLS-only server does with a
// client that does not speak TLS. It is a TLS kind.
type ClosedAtFirstReply struct{ Err error }

func (e *ClosedAtFirstReply) Error() string {
	return "server closed the connection before its first reply (a TLS-only port? set tls = true): " + e.Err.Error()
}

func (e *ClosedAtFirstReply) Unwrap() error { return e.Err }

// IsClosedByPeer reports whether err says the peer closed or reset the connection.
func IsClosedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Of classifies err (None for nil). It follows wrapped errors, then falls back to the
// text, so that an error that lost its type (a message carried as a string) is still
// named the same way.
func Of(err error) Kind {
	if err == nil {
		return None
	}
	var (
		closed  *ClosedAtFirstReply
		perr    *resp.ProtocolError
		cerr    *resp.ClosedError
		hsErr   *resp.TLSHandshakeError
		rerr    redis.Error
		dnsErr  *net.DNSError
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &closed), errors.As(err, &hsErr):
		return TLS
	case errors.As(err, &perr):
		if strings.Contains(perr.Problem, "TLS record") {
			return TLS
		}
		return Protocol
	case errors.As(err, &cerr):
		return Closed
	case errors.As(err, &rerr):
		if k := ofRedisError(string(rerr)); k != None {
			return k
		}
		return OfText(err.Error())
	case errors.As(err, &dnsErr):
		return DNS
	case errors.As(err, &recErr), errors.As(err, &alert), errors.As(err, &verify),
		errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return TLS
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return Timeout
	case errors.As(err, &netErr) && netErr.Timeout():
		if strings.Contains(err.Error(), "TLS handshake") {
			return TLS // redigo's handshake timeout: a TLS client at a plain port waits forever
		}
		return Timeout
	case IsClosedByPeer(err):
		return Closed
	}
	return OfText(err.Error())
}

// OfText classifies an error message that is only known as text (for instance one
// read back from a snapshot or an audit line). It recognises the messages that Of's
// typed cases produce, so both agree.
func OfText(msg string) Kind {
	if msg == "" {
		return None
	}
	if k := ofRedisError(msg); k != None {
		return k
	}
	low := strings.ToLower(msg)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(low, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("wrongpass", "noauth", "noperm", "invalid password", "invalid username-password",
		"called without any password configured", "authentication required"):
		return Auth
	case has("tls-only port", "tls:", "tls handshake", "x509:", "certificate"):
		return TLS
	case has("protocol error"): // before timeout: a reply that did not end by the deadline names both
		return Protocol
	case has("no such host", "server misbehaving"):
		return DNS
	case has("connection refused"):
		return Refused
	case has("timeout", "timed out", "deadline exceeded", "no answer", "no reply within",
		"no reply for", "still running (master stuck)"):
		return Timeout
	case has("possible server error", "resp:", "unexpected reply", "unexpected response", "protocol error"):
		return Protocol
	case has("connection reset", "broken pipe", "closed the connection", "connection broken", "connection aborted") ||
		strings.Contains(msg, "EOF"):
		return Closed
	}
	return Other
}

// ofRedisError classifies a Redis error reply by its code (None when it is not one the
// kinds single out).
func ofRedisError(msg string) Kind {
	// The reply may be wrapped ("connect: WRONGPASS ..."): look at each word start.
	for _, code := range []string{"WRONGPASS", "NOAUTH", "NOPERM"} {
		if strings.HasPrefix(msg, code+" ") || strings.Contains(msg, ": "+code+" ") {
			return Auth
		}
	}
	if strings.Contains(msg, "ERR AUTH") && strings.Contains(msg, "without any password configured") {
		return Auth
	}
	if strings.Contains(msg, "ERR invalid password") || strings.Contains(msg, "ERR Client sent AUTH") {
		return Auth
	}
	return None
}

// Describe returns "kind: message" for display ("" for an empty message).
func Describe(k Kind, msg string) string {
	if msg == "" {
		return ""
	}
	if k == None {
		k = OfText(msg)
	}
	return k.String() + ": " + msg
}
