// Package resp checks a Redis server's replies (RESP2) as their bytes arrive, below the
// client that parses them, so that a broken or hostile server costs one connection and
// never the process. Its Conn wraps a net.Conn: it reads the reply framing as bytes pass
// through and fails the Read, with a ProtocolError naming the problem, on a length that
// overflows, a negative length other than -1, a bulk string or an array larger than its
// Limits, arrays nested deeper than the limit, an over-long line or an unknown reply
// type; a reply still unfinished when a deadline passes is a ProtocolError too. It also
// holds back a header that declares more than the reader above would reserve for it
// before its bytes arrived (redigo allocates a declared bulk or array at once), so no
// read reserves much more than it has received. Dialer installs it under redigo
// (redis.DialContextFunc); ParseInt and Limits.BulkLen / ArrayLen are the same rules for
// a reader of its own.
//
// It never parses values for the caller, never writes a command of its own, never retries
// and never buffers more than what has arrived. It speaks RESP2 only (redigo's
// protocol): RESP3 types are protocol errors.
package resp

import (
	"fmt"
	"strconv"
)

// The limits. A reply beyond them is a ProtocolError and its connection is closed.
const (
	// DefaultMaxBulk (1 MiB) bounds one bulk string on a connection that carries lock
	// traffic and topology discovery: lock values and fencing counters are tens of
	// bytes, INFO sections and CLUSTER NODES of a large cluster a few hundred KiB. A
	// real server never sends more there, and a lying one is stopped early.
	DefaultMaxBulk = 1 << 20

	// RedisMaxBulk (512 MiB) is Redis's own proto-max-bulk-len default, the largest
	// string a stock server stores: the bound for a reader of arbitrary keys' values
	// (the inspector's SCAN + MGET), which must not call a healthy master broken
	// because someone keeps a large blob next to the locks.
	RedisMaxBulk = 512 << 20

	// DefaultMaxArray (65536) bounds the elements of one array on lock and topology
	// connections: CLUSTER SLOTS has at most one entry per slot range (16384 slots),
	// ROLE and SENTINEL replies list a handful of nodes, lock scripts return a few
	// values.
	DefaultMaxArray = 1 << 16

	// RedisMaxArray (1M) bounds one array for a reader of arbitrary keys: Redis's own
	// limit on the arguments of one command, far above a SCAN page, an MGET of one
	// page or an HSCAN of a small hash.
	RedisMaxArray = 1 << 20

	// DefaultMaxDepth (16) bounds array nesting. The deepest reply a lock or topology
	// connection sees is CLUSTER SHARDS, 4 levels; redigo parses nesting by recursion,
	// so an unbounded depth is an unbounded stack.
	DefaultMaxDepth = 16

	// DefaultMaxLine (64 KiB) bounds one simple-string, error or integer line: Redis
	// itself refuses inline requests longer than that (PROTO_INLINE_MAX_SIZE), and an
	// error text is a line. A line never ends without its CRLF, so without a bound a
	// server could grow a reader's line buffer forever.
	DefaultMaxLine = 64 << 10

	// Unbacked (64 KiB) is how much memory a header may make the reader above reserve
	// before the bytes it declares have arrived: a bulk string's length, or 16 bytes
	// (an interface value in redigo's reply slice) per element of an array. A header
	// that declares more is held back by Conn until the bytes received after it cover
	// the rest, or its value is complete.
	Unbacked = 64 << 10

	// elemCost is what redigo reserves per declared array element: one interface value.
	elemCost = 16
)

// Limits bounds what one reply may declare. A zero field takes its default
// (DefaultMaxBulk, DefaultMaxArray, DefaultMaxDepth, DefaultMaxLine).
type Limits struct {
	MaxBulk  int64 // longest bulk string, in bytes
	MaxArray int64 // most elements of one array
	MaxDepth int   // deepest nesting of arrays (1: arrays, but none inside another)
	MaxLine  int   // longest simple string, error or integer line, without its CRLF
}

// DefaultLimits are the limits of lock and topology connections.
var DefaultLimits = Limits{MaxBulk: DefaultMaxBulk, MaxArray: DefaultMaxArray, MaxDepth: DefaultMaxDepth, MaxLine: DefaultMaxLine}

// RedisLimits are the limits of a reader of arbitrary keys' values: what a stock Redis
// server may legitimately send.
var RedisLimits = Limits{MaxBulk: RedisMaxBulk, MaxArray: RedisMaxArray, MaxDepth: DefaultMaxDepth, MaxLine: DefaultMaxLine}

// orDefault returns l with each zero field set to its default.
func (l Limits) orDefault() Limits {
	if l.MaxBulk <= 0 {
		l.MaxBulk = DefaultMaxBulk
	}
	if l.MaxArray <= 0 {
		l.MaxArray = DefaultMaxArray
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxLine <= 0 {
		l.MaxLine = DefaultMaxLine
	}
	return l
}

// ProtocolError is a reply that breaks RESP2 or the Limits, or that did not end before
// a deadline. The connection it came on must not be used again (Conn closes it).
type ProtocolError struct {
	Problem string // what was wrong, e.g. "bulk length 99999999999999999999 overflows int64"
	Err     error  // the deadline error, for a reply that did not end in time
}

// Error says "protocol error: " and the problem.
func (e *ProtocolError) Error() string {
	if e.Err != nil {
		return "protocol error: " + e.Problem + " (" + e.Err.Error() + ")"
	}
	return "protocol error: " + e.Problem
}

// Unwrap returns the deadline error of a reply that did not end in time (nil
// otherwise), so that a caller's timeout handling still sees it.
func (e *ProtocolError) Unwrap() error { return e.Err }

func protoErr(format string, a ...any) *ProtocolError {
	return &ProtocolError{Problem: fmt.Sprintf(format, a...)}
}

// ParseInt parses the digits of an integer reply or a length: an optional minus sign
// and at least one decimal digit, nothing else, within int64. It never wraps around:
// an overflow is a ProtocolError.
func ParseInt(b []byte) (int64, error) {
	if n, ok := shortUint(b); ok {
		return n, nil
	}
	return parseInt(b, "integer")
}

// shortUint parses b where it is 1 to 18 decimal digits and nothing else, which no
// int64 overflows: nearly every integer and length a server sends, parsed without
// the checks (and the call) that the rest need.
func shortUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, ch := range b {
		if ch-'0' > 9 {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	return n, true
}

func parseInt(b []byte, what string) (int64, error) {
	digits := b
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 {
		return 0, protoErr("%s %s has no digits", what, quote(b))
	}
	var n uint64
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return 0, protoErr("%s %s is not a number", what, quote(b))
		}
		if n > (1<<63)/10 {
			return 0, protoErr("%s %s overflows int64", what, quote(b))
		}
		n = n*10 + uint64(ch-'0')
		if n > 1<<63 {
			return 0, protoErr("%s %s overflows int64", what, quote(b))
		}
	}
	if neg {
		return -int64(n), nil // n == 1<<63 gives math.MinInt64, as it should
	}
	if n > 1<<63-1 {
		return 0, protoErr("%s %s overflows int64", what, quote(b))
	}
	return int64(n), nil
}

// parseLen parses a length: decimal digits, or exactly "-1" (nil).
func parseLen(b []byte, what string) (int64, error) {
	n, err := parseInt(b, what)
	switch {
	case err != nil:
		return 0, err
	case n < -1:
		return 0, protoErr("%s %d is negative", what, n)
	case len(b) > 0 && b[0] == '-' && string(b) != "-1":
		return 0, protoErr("%s %s is not a length", what, quote(b))
	}
	return n, nil
}

// BulkLen parses the length of a bulk string header (the digits after '$'): -1 is a
// nil reply; any other negative length, an overflow or a length over l.MaxBulk is a
// ProtocolError.
func (l Limits) BulkLen(b []byte) (int64, error) {
	if n, ok := shortUint(b); ok && n <= l.MaxBulk {
		return n, nil // (within the limit set: the default, if unset, is larger)
	}
	return l.bulkLen(b)
}

func (l Limits) bulkLen(b []byte) (int64, error) {
	n, err := parseLen(b, "bulk length")
	switch {
	case err != nil:
		return 0, err
	case n > l.orDefault().MaxBulk:
		return 0, protoErr("bulk string of %d bytes exceeds the limit of %s", n, size(l.orDefault().MaxBulk))
	}
	return n, nil
}

// ArrayLen parses the length of an array header (the digits after '*'): -1 is a nil
// array; any other negative length, an overflow or a length over l.MaxArray is a
// ProtocolError.
func (l Limits) ArrayLen(b []byte) (int64, error) {
	if n, ok := shortUint(b); ok && n <= l.MaxArray {
		return n, nil // (within the limit set: the default, if unset, is larger)
	}
	return l.arrayLen(b)
}

func (l Limits) arrayLen(b []byte) (int64, error) {
	n, err := parseLen(b, "array length")
	switch {
	case err != nil:
		return 0, err
	case n > l.orDefault().MaxArray:
		return 0, protoErr("array of %d elements exceeds the limit of %d", n, l.orDefault().MaxArray)
	}
	return n, nil
}

// quote shows server bytes in a message: quoted, escaped, and cut at 32 bytes.
func quote(b []byte) string {
	if len(b) > 32 {
		return strconv.Quote(string(b[:32])) + "..."
	}
	return strconv.Quote(string(b))
}

// size writes a byte count in the largest binary unit that divides it.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Incomplete describes a reply cut short for a ProtocolError or a ClosedError: "a bulk
// string of 536000000 bytes declared, 14 received".
func Incomplete(kind string, declared, received int64) string {
	unit := "bytes"
	if kind == "array" {
		unit = "elements"
	}
	what := "a bulk string"
	if kind == "array" {
		what = "an array"
	}
	return fmt.Sprintf("%s of %d %s declared, %d received", what, declared, unit, received)
}
