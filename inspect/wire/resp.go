package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock/resp"
)

// Conn is a bare RESP2 connection for the bulk of a poll: SCAN pages, values and
// PTTLs of thousands of keys. It writes pipelined commands with one deadline per
// poll and parses replies without a per-reply allocation or deadline, which is where
// a general-purpose client spends most of its time on this workload. It checks every
// reply by the rules of redlock/resp (with resp.RedisLimits: any key's value may be
// read) and reserves memory for a value only as its bytes arrive.
type Conn struct {
	live  *Liveness // when set, flush gives each round trip its own deadline
	nc    net.Conn
	r     *bufio.Reader
	w     *bufio.Writer
	in    *countReader
	lim   resp.Limits
	arena *[]byte // bulk replies are copied here, in chunks (see into)
	own   []byte  // the default arena
	num   [20]byte

	// Where the reply being read stands, to name it when it is cut short.
	open     []openArray // arrays whose elements are being read
	bulkDecl int64       // the bulk string being read: declared length,
	bulkGot  int64       // and bytes of it in
	inBulk   bool
}

// openArray is an array whose elements are being read.
type openArray struct{ n, left int64 }

// countReader counts the bytes read from the server, and with live set, marks the
// time spent waiting for them.
type countReader struct {
	r    io.Reader
	n    int64
	live *Liveness
}

func (c *countReader) Read(p []byte) (int, error) {
	if c.live != nil {
		c.live.Waiting.CompareAndSwap(0, time.Now().UnixNano())
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.live != nil && n > 0 {
		c.live.Waiting.Store(0)
	}
	return n, err
}

// ReplyError is an error reply from the server (e.g. NOPERM, WRONGTYPE).
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// Dial connects to m and authenticates (AUTH [user] password, SELECT db), bounded
// by ctx.
func Dial(ctx context.Context, m config.MasterConfig) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	if m.TLS {
		tc, err := m.TLSConfig()
		if err != nil {
			nc.Close()
			return nil, err
		}
		tconn := tls.Client(nc, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tconn
	}
	rw := newRawTCP(nc)
	in := &countReader{r: rw}
	c := &Conn{nc: nc, r: bufio.NewReaderSize(in, 64<<10), w: bufio.NewWriterSize(rw, 64<<10), in: in, lim: resp.RedisLimits}
	var setup [][]string
	if m.Password != "" {
		if m.Username != "" {
			setup = append(setup, []string{"AUTH", m.Username, m.Password})
		} else {
			setup = append(setup, []string{"AUTH", m.Password})
		}
	}
	if m.DB != 0 {
		setup = append(setup, []string{"SELECT", strconv.Itoa(m.DB)})
	}
	for _, cmd := range setup {
		c.Array(len(cmd))
		for _, a := range cmd {
			c.Str(a)
		}
	}
	if len(setup) > 0 {
		if err := c.Flush(); err != nil {
			c.Close()
			return nil, err
		}
		for range setup {
			if err := c.readOK(); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	return c, nil
}

// Close closes the connection.
func (c *Conn) Close() { c.nc.Close() }

// SetDeadline sets the deadline of every read and write on the connection.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// Array writes the header of an array of n elements.
func (c *Conn) Array(n int) {
	c.w.WriteByte('*')
	c.w.Write(strconv.AppendInt(c.num[:0], int64(n), 10))
	c.w.WriteString("\r\n")
}

// Bulk writes b as a bulk string.
func (c *Conn) Bulk(b []byte) {
	c.w.Write(appendBulk(c.w.AvailableBuffer(), b))
}

// appendBulk appends b as a RESP bulk string: in one piece, so that writing a
// command is one copy into the buffered writer rather than one call per token.
func appendBulk[T []byte | string](dst []byte, b T) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, b...)
	return append(dst, "\r\n"...)
}

// Str writes s as a bulk string.
func (c *Conn) Str(s string) {
	c.w.WriteByte('$')
	c.w.Write(strconv.AppendInt(c.num[:0], int64(len(s)), 10))
	c.w.WriteString("\r\n")
	c.w.WriteString(s)
	c.w.WriteString("\r\n")
}

// Cmd writes one command of string arguments.
func (c *Conn) Cmd(args ...string) {
	c.Array(len(args))
	for _, a := range args {
		c.Str(a)
	}
}

// KeyCmd writes `name key`.
func (c *Conn) KeyCmd(name string, key []byte) {
	b := append(c.w.AvailableBuffer(), "*2\r\n"...)
	c.w.Write(appendBulk(appendBulk(b, name), key))
}

// Flush sends what was written since the last Flush.
func (c *Conn) Flush() error {
	if c.live != nil {
		// A round trip: the last one's replies are all in, so the master is alive,
		// and this one has inspect.timeout to answer, however long the poll has run.
		dl := time.Now().Add(c.live.RoundTrip)
		if !c.live.Until.IsZero() && c.live.Until.Before(dl) {
			dl = c.live.Until
		}
		if err := c.nc.SetDeadline(dl); err != nil {
			return err
		}
	}
	return c.w.Flush()
}

// Liveness bounds each round trip of a key read rather than the whole read: a master
// that keeps answering stays up however many keys it holds (see Poller.read). Only
// the master's silence counts, never this process's own work or its wait for a CPU:
// what a master sent in time is read even when the round trip's deadline has passed
// by then (rawTCP), and waiting is set only while a read waits for bytes.
type Liveness struct {
	RoundTrip time.Duration
	Until     time.Time    // a hard end (the caller's context deadline), or zero
	Waiting   atomic.Int64 // unix ns since which a read has waited for the master; 0 while none does
}

// SetLive makes flush give each round trip its own deadline and marks the reads'
// waits in l (nil: neither).
func (c *Conn) SetLive(l *Liveness) {
	c.live, c.in.live = l, l
}

// line reads one reply line without its CRLF; the slice is valid until the next read.
func (c *Conn) line() ([]byte, error) {
	b, err := c.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, &resp.ProtocolError{Problem: fmt.Sprintf("a %q line is longer than %d bytes", b[0], len(b))}
	case err != nil:
		return nil, c.cut(err, len(b))
	case len(b) < 3 || b[len(b)-2] != '\r':
		return nil, &resp.ProtocolError{Problem: fmt.Sprintf("a reply line ends without CRLF: %q", b[:min(len(b), 32)])}
	}
	return b[:len(b)-2], nil
}

// cut names a read error met inside a reply (partial: bytes of a line read so far): a
// deadline is a reply that did not end (a ProtocolError), a close or reset after the
// server's first byte a resp.ClosedError. Other errors pass unchanged.
func (c *Conn) cut(err error, partial int) error {
	reply := ""
	switch {
	case c.inBulk:
		reply = resp.Incomplete("bulk", c.bulkDecl, c.bulkGot)
	case partial > 0:
		reply = fmt.Sprintf("a reply line of %d bytes so far without its CRLF", partial)
	case len(c.open) > 0:
		a := c.open[len(c.open)-1]
		reply = resp.Incomplete("array", a.n, a.n-a.left)
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		if reply != "" {
			return &resp.ProtocolError{Problem: "reply did not end before the deadline: " + reply, Err: err}
		}
	case c.in != nil && c.in.n > 0 && errkind.IsClosedByPeer(err):
		return &resp.ClosedError{Err: err, Reply: reply, Received: c.in.n}
	}
	return err
}

// took ends one value, and the arrays it completes.
func (c *Conn) took() {
	for len(c.open) > 0 {
		top := &c.open[len(c.open)-1]
		if top.left--; top.left > 0 {
			return
		}
		c.open = c.open[:len(c.open)-1]
	}
}

// header reads a reply's first line; an error reply becomes a respError.
func (c *Conn) header(want byte) ([]byte, error) {
	b, err := c.line()
	if err != nil {
		return nil, err
	}
	if b[0] == '-' {
		c.took()
		return nil, ReplyError(b[1:])
	}
	if b[0] != want {
		return nil, &resp.ProtocolError{Problem: fmt.Sprintf("got a %q reply where a %q reply was expected", b[0], want)}
	}
	return b[1:], nil
}

func (c *Conn) readOK() error {
	_, err := c.header('+')
	if err == nil {
		c.took()
	}
	return err
}

// ReadInt reads an integer reply.
func (c *Conn) ReadInt() (int64, error) {
	b, err := c.header(':')
	if err != nil {
		return 0, err
	}
	n, err := resp.ParseInt(b)
	if err == nil {
		c.took()
	}
	return n, err
}

// ReadSimple reads a status reply (e.g. TYPE's).
func (c *Conn) ReadSimple() (string, error) {
	b, err := c.header('+')
	if err == nil {
		c.took()
	}
	return string(b), err
}

// ReadArray reads an array header and returns its length (-1: nil array). Nothing is
// reserved for the elements it declares: the caller reads them one by one.
func (c *Conn) ReadArray() (int, error) {
	b, err := c.header('*')
	if err != nil {
		return 0, err
	}
	n, err := c.lim.ArrayLen(b)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		c.open = append(c.open, openArray{n: n, left: n})
	} else {
		c.took()
	}
	return int(n), nil
}

// Into directs the following bulk replies to arena. The caller may reset it to
// length 0 once nothing refers to what was read into it.
func (c *Conn) Into(arena *[]byte) { c.arena = arena }

// ReadBulk reads a bulk string into the current arena (chunks of arenaChunk bytes; a
// larger string gets a buffer of its own); nil for a nil reply. The bytes
// stay valid until the arena is reset (it grows in new chunks, never by moving old
// ones). The memory for it is reserved as its bytes arrive, never from its declared
// length alone.
func (c *Conn) ReadBulk() ([]byte, error) {
	b, err := c.header('$')
	if err != nil {
		return nil, err
	}
	n, err := c.lim.BulkLen(b)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		c.took()
		return nil, nil
	}
	c.inBulk, c.bulkDecl, c.bulkGot = true, n, 0
	var v []byte
	if n+2 > ArenaChunk {
		v, err = c.readLarge(n)
	} else {
		v, err = c.readSmall(int(n))
	}
	if err != nil {
		return nil, err
	}
	c.inBulk = false
	c.took()
	return v, nil
}

// readSmall reads a bulk string of n bytes (n+2 <= arenaChunk) into the arena.
func (c *Conn) readSmall(n int) ([]byte, error) {
	if c.arena == nil {
		c.arena = &c.own
	}
	a := *c.arena
	if cap(a)-len(a) < n+2 {
		a = make([]byte, 0, ArenaChunk) // a fixed chunk, whatever the length declared
		Prefault(a)
	}
	start := len(a)
	a = a[:start+n+2]
	if k, err := io.ReadFull(c.r, a[start:]); err != nil {
		c.bulkGot = int64(min(k, n))
		return nil, c.cut(err, 0)
	}
	if a[start+n] != '\r' || a[start+n+1] != '\n' {
		return nil, &resp.ProtocolError{Problem: fmt.Sprintf("bulk string of %d bytes is not followed by CRLF", n)}
	}
	*c.arena = a[:start+n]
	return a[start : start+n : start+n], nil
}

// readLarge reads a bulk string of n bytes (n+2 > arenaChunk) into a buffer of its
// own, which doubles as the bytes arrive: it is never more than twice what came.
func (c *Conn) readLarge(n int64) ([]byte, error) {
	need := int(n) + 2
	buf := make([]byte, 0, ArenaChunk)
	for len(buf) < need {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(need, 2*cap(buf)))
			Prefault(nb)
			copy(nb, buf)
			buf = nb
		}
		k, err := c.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		c.bulkGot = int64(min(len(buf), int(n)))
		if err != nil && len(buf) < need {
			return nil, c.cut(err, 0)
		}
	}
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return nil, &resp.ProtocolError{Problem: fmt.Sprintf("bulk string of %d bytes is not followed by CRLF", n)}
	}
	return buf[:n:n], nil
}

// IsTimeout reports whether err is a deadline that passed.
func IsTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// ArenaChunk is the size of the chunks that replies' bulk strings are read into (see
// ReadBulk) and that the poller's collector keeps its strings in.
const ArenaChunk = 64 << 10
