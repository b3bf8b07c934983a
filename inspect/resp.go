package inspect

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
)

// respConn is a bare RESP2 connection for the bulk of a poll: SCAN pages, values and
// PTTLs of thousands of keys. It writes pipelined commands with one deadline per
// poll and parses replies without a per-reply allocation or deadline, which is where
// a general-purpose client spends most of its time on this workload.
type respConn struct {
	nc    net.Conn
	r     *bufio.Reader
	w     *bufio.Writer
	arena *[]byte // bulk replies are copied here, in chunks (see into)
	own   []byte  // the default arena
	num   [20]byte
}

// respError is an error reply from the server (e.g. NOPERM, WRONGTYPE).
type respError string

func (e respError) Error() string { return string(e) }

// dialRESP connects to m and authenticates (AUTH [user] password, SELECT db), bounded
// by ctx.
func dialRESP(ctx context.Context, m config.MasterConfig) (*respConn, error) {
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
	c := &respConn{nc: nc, r: bufio.NewReaderSize(rw, 64<<10), w: bufio.NewWriterSize(rw, 64<<10)}
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
		c.array(len(cmd))
		for _, a := range cmd {
			c.str(a)
		}
	}
	if len(setup) > 0 {
		if err := c.flush(); err != nil {
			c.close()
			return nil, err
		}
		for range setup {
			if err := c.readOK(); err != nil {
				c.close()
				return nil, err
			}
		}
	}
	return c, nil
}

func (c *respConn) close() { c.nc.Close() }

func (c *respConn) setDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

func (c *respConn) array(n int) {
	c.w.WriteByte('*')
	c.w.Write(strconv.AppendInt(c.num[:0], int64(n), 10))
	c.w.WriteString("\r\n")
}

func (c *respConn) bulk(b []byte) {
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

func (c *respConn) str(s string) {
	c.w.WriteByte('$')
	c.w.Write(strconv.AppendInt(c.num[:0], int64(len(s)), 10))
	c.w.WriteString("\r\n")
	c.w.WriteString(s)
	c.w.WriteString("\r\n")
}

// cmd writes one command of string arguments.
func (c *respConn) cmd(args ...string) {
	c.array(len(args))
	for _, a := range args {
		c.str(a)
	}
}

// keyCmd writes `name key`.
func (c *respConn) keyCmd(name string, key []byte) {
	b := append(c.w.AvailableBuffer(), "*2\r\n"...)
	c.w.Write(appendBulk(appendBulk(b, name), key))
}

func (c *respConn) flush() error { return c.w.Flush() }

// line reads one reply line without its CRLF; the slice is valid until the next read.
func (c *respConn) line() ([]byte, error) {
	b, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(b) < 3 || b[len(b)-2] != '\r' {
		return nil, errors.New("resp: malformed line")
	}
	return b[:len(b)-2], nil
}

// header reads a reply's first line; an error reply becomes a respError.
func (c *respConn) header(want byte) ([]byte, error) {
	b, err := c.line()
	if err != nil {
		return nil, err
	}
	if b[0] == '-' {
		return nil, respError(b[1:])
	}
	if b[0] != want {
		return nil, fmt.Errorf("resp: got %q, want %q reply", b[0], want)
	}
	return b[1:], nil
}

func parseLen(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errors.New("resp: empty length")
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, fmt.Errorf("resp: bad number %q", b)
		}
		n = n*10 + int64(ch-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

func (c *respConn) readOK() error {
	_, err := c.header('+')
	return err
}

// readInt reads an integer reply.
func (c *respConn) readInt() (int64, error) {
	b, err := c.header(':')
	if err != nil {
		return 0, err
	}
	return parseLen(b)
}

// readSimple reads a status reply (e.g. TYPE's).
func (c *respConn) readSimple() (string, error) {
	b, err := c.header('+')
	return string(b), err
}

// readArray reads an array header and returns its length (-1: nil array).
func (c *respConn) readArray() (int, error) {
	b, err := c.header('*')
	if err != nil {
		return 0, err
	}
	n, err := parseLen(b)
	return int(n), err
}

// into directs the following bulk replies to arena. The caller may reset it to
// length 0 once nothing refers to what was read into it.
func (c *respConn) into(arena *[]byte) { c.arena = arena }

// readBulk reads a bulk string into the current arena; nil for a nil reply. The bytes
// stay valid until the arena is reset (it grows in new chunks, never by moving old
// ones).
func (c *respConn) readBulk() ([]byte, error) {
	b, err := c.header('$')
	if err != nil {
		return nil, err
	}
	n, err := parseLen(b)
	if err != nil || n < 0 {
		return nil, err
	}
	if n > 512<<20 {
		return nil, errors.New("resp: bulk too large")
	}
	if c.arena == nil {
		c.arena = &c.own
	}
	a := *c.arena
	if int64(cap(a)-len(a)) < n+2 {
		a = make([]byte, 0, max(64<<10, n+2))
		prefault(a)
	}
	start := len(a)
	a = a[:start+int(n)+2]
	if _, err := io.ReadFull(c.r, a[start:]); err != nil {
		return nil, err
	}
	if a[start+int(n)] != '\r' {
		return nil, errors.New("resp: bulk without CRLF")
	}
	*c.arena = a[:start+int(n)]
	return a[start : start+int(n) : start+int(n)], nil
}
