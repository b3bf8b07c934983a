package resp

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Conn is a net.Conn whose reads are checked as RESP2 replies (see the package doc).
// Bytes come out of Read as they arrive, except a header that declares more than
// Unbacked: it, and what follows it, is kept until enough of what it declares has
// arrived. A broken rule closes the connection and fails the Read once the bytes
// before the bad value have been read; so does a reply cut short, as a ClosedError. A
// deadline that passes inside a reply fails it as a ProtocolError that wraps the
// timeout.
//
// Writes pass through. When the first write is a TLS handshake record, a TLS client
// (redigo's DialUseTLS) sits above, and the Conn passes reads through unchecked: to
// check a TLS connection, let Dialer do the TLS.
type Conn struct {
	net.Conn
	sc        *scanner
	buf       []byte // received and not yet read: buf[off:]
	off       int
	delivered int64 // stream offset of buf[off]
	err       error // sticky, once the bytes before it are read
	wrote     atomic.Bool
	opaque    atomic.Bool // TLS above: no checks
}

// NewConn checks the replies read from nc against l (zero fields: defaults).
func NewConn(nc net.Conn, l Limits) *Conn {
	return &Conn{Conn: nc, sc: newScanner(l)}
}

// minRead is the least room offered to the connection when bytes are held.
const minRead = 4 << 10

// Read reads checked reply bytes into p.
func (c *Conn) Read(p []byte) (int, error) {
	if c.opaque.Load() {
		return c.Conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if r := c.ready(); r > 0 {
			n := copy(p, c.buf[c.off:c.off+int(min(r, int64(len(p))))])
			c.off += n
			c.delivered += int64(n)
			if c.off == len(c.buf) {
				c.buf, c.off = c.buf[:0], 0
				if cap(c.buf) > Unbacked {
					c.buf = nil // do not keep a large reply's buffer
				}
			}
			return n, nil
		}
		if c.err != nil {
			return 0, c.err
		}
		if len(c.buf) == c.off {
			// Nothing held: read straight into p, keep what may not go on yet.
			n, err := c.Conn.Read(p)
			c.sc.feed(p[:n])
			out := int(min(max(c.sc.release()-c.delivered, 0), int64(n)))
			c.buf = append(c.buf[:0], p[out:n]...)
			c.off = 0
			c.delivered += int64(out)
			if out > 0 {
				c.check(err, true)
				return out, nil
			}
			if err := c.check(err, false); err != nil {
				return 0, err
			}
			continue
		}
		// Bytes are held: read more behind them, growing the buffer as they arrive.
		if cap(c.buf)-len(c.buf) < minRead {
			nb := make([]byte, len(c.buf), max(2*cap(c.buf), len(c.buf)+minRead))
			copy(nb, c.buf)
			c.buf = nb
		}
		end := len(c.buf)
		n, err := c.Conn.Read(c.buf[end:cap(c.buf)])
		c.buf = c.buf[:end+n]
		c.sc.feed(c.buf[end : end+n])
		if err := c.check(err, c.ready() > 0); err != nil {
			return 0, err
		}
	}
}

// ready is how many of the held bytes may be read now.
func (c *Conn) ready() int64 {
	return min(max(c.sc.release()-c.delivered, 0), int64(len(c.buf)-c.off))
}

// check takes the error of a read from the connection. A broken rule (the connection is
// then closed), a close or reset, and a deadline inside a reply end the stream: they
// are kept, to be returned once the bytes before them are read. Any other error, a
// deadline between replies among them, is returned when nothing can be read first
// (!pending) and forgotten otherwise, as net.Conn lets a caller read on after it.
func (c *Conn) check(err error, pending bool) error {
	if c.err != nil {
		return nil
	}
	if c.sc.err != nil {
		c.err = c.sc.err
		c.Conn.Close()
		return nil
	}
	if err == nil {
		return nil
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		if c.sc.midReply() {
			c.err = &ProtocolError{Problem: "reply did not end before the deadline: " + c.sc.pending(), Err: err}
			return nil
		}
	case c.sc.pos > 0 && isClosed(err):
		c.err = &ClosedError{Err: err, Reply: c.sc.pending(), Received: c.sc.pos}
		return nil
	case err == io.EOF || isClosed(err):
		c.err = err
		return nil
	}
	if pending {
		return nil
	}
	return err
}

// Write writes p; a first write that is a TLS handshake record turns the checks off.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) > 0 && !c.wrote.Load() {
		c.wrote.Store(true)
		if p[0] == 0x16 { // TLS record type: handshake
			c.opaque.Store(true)
		}
	}
	return c.Conn.Write(p)
}

// Received returns how many bytes the server has sent on the connection.
func (c *Conn) Received() int64 { return c.sc.pos }

// ClosedError is a connection that the server closed or reset after it had sent at
// least one byte: mid-reply (Reply says where), or between replies. A connection closed
// before any byte keeps its plain error (io.EOF, ECONNRESET), which is what a TLS-only
// server does to a plain-text client.
type ClosedError struct {
	Err      error  // io.EOF, or the reset
	Reply    string // the unfinished reply, e.g. "a bulk string of 10 bytes declared, 2 received"; "" between replies
	Received int64  // bytes the server sent on the connection
}

// Error says who closed, and where in the reply stream.
func (e *ClosedError) Error() string {
	what := "server closed the connection"
	if !errors.Is(e.Err, io.EOF) {
		what = "connection broken (" + e.Err.Error() + ")"
	}
	if e.Reply != "" {
		return what + " mid-reply: " + e.Reply
	}
	return what + " between replies, after " + strconv.FormatInt(e.Received, 10) + " bytes"
}

// Unwrap returns the close or reset.
func (e *ClosedError) Unwrap() error { return e.Err }

// isClosed reports whether err says the peer closed or reset the connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}
