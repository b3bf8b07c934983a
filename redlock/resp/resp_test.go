package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// chunkConn is a net.Conn that serves data in reads of at most chunk bytes, then EOF
// (or err). Writes are discarded.
type chunkConn struct {
	data  []byte
	chunk int
	err   error
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.data)
	c.data = c.data[n:]
	return n, nil
}
func (c *chunkConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *chunkConn) Close() error                     { return nil }
func (c *chunkConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *chunkConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *chunkConn) SetDeadline(time.Time) error      { return nil }
func (c *chunkConn) SetReadDeadline(time.Time) error  { return nil }
func (c *chunkConn) SetWriteDeadline(time.Time) error { return nil }

// readAll reads everything the Conn lets through and the error that ended it.
func readAll(c *Conn) ([]byte, error) {
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}

// Each hostile reply is a ProtocolError naming the problem, on its own and inside an
// array; redigo reading through the Conn neither panics nor runs out of memory.
func TestHostileReplies(t *testing.T) {
	deep := strings.Repeat("*1\r\n", DefaultMaxDepth+1) + ":1\r\n"
	cases := []struct{ reply, want string }{
		{"$99999999999999999999\r\n", "overflows int64"},
		{"$9223372036854775808\r\n", "overflows int64"},
		{"$18446744073709551617\r\n", "overflows int64"},
		{"$99999999999\r\n", "bulk string of 99999999999 bytes exceeds the limit of 1 MiB"},
		{"*99999999999\r\n", "array of 99999999999 elements exceeds the limit of 65536"},
		{"*-2\r\n", "array length -2 is negative"},
		{"$-5\r\n", "bulk length -5 is negative"},
		{"$-0\r\n", "is not a length"},
		{":99999999999999999999\r\n", "integer \"99999999999999999999\" overflows int64"},
		{"$1234567890123456789012345678901234567890\r\n", "longer than any int64"},
		{"$3\r\nabcd\r\n", "not followed by CRLF"},
		{"+OK\n", "without CR"},
		{"%1\r\n", "unknown reply type byte"},
		{"\x15\x03\x01\x00\x02\x02\x46", "a TLS record (a TLS-only port?"},
		{"+" + strings.Repeat("x", DefaultMaxLine+1) + "\r\n", "longer than 64 KiB"},
		{deep, fmt.Sprintf("nested deeper than %d", DefaultMaxDepth)},
	}
	for _, c := range cases {
		for i, reply := range []string{c.reply, "*2\r\n:1\r\n" + c.reply} {
			if i == 1 && strings.Contains(c.want, "TLS record") {
				c.want = "unknown reply type byte" // only a first byte is taken for TLS
			}
			for _, chunk := range []int{1, 7, 1 << 20} {
				g := NewConn(&chunkConn{data: []byte(reply), chunk: chunk}, Limits{})
				rc := redis.NewConn(g, 0, 0)
				_, err := rc.Receive()
				var pe *ProtocolError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%.40q in chunks of %d: error %v, want a ProtocolError with %q", reply, chunk, err, c.want)
				}
			}
		}
	}
}

// Valid replies, large ones included, read the same through the Conn as without it, in
// any chunking.
func TestValidRepliesPassWhole(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 3<<20)
	var arr strings.Builder
	fmt.Fprintf(&arr, "*%d\r\n", 100000)
	for i := range 100000 {
		fmt.Fprintf(&arr, ":%d\r\n", i)
	}
	replies := []string{
		"+OK\r\n", "-ERR wrong\r\n", ":-9223372036854775808\r\n", ":9223372036854775807\r\n",
		"$-1\r\n", "*-1\r\n", "*0\r\n", "$0\r\n\r\n", "$4\r\na\r\nb\r\n",
		"*2\r\n*3\r\n:1\r\n$1\r\nx\r\n*0\r\n$-1\r\n",
		strings.Repeat("*1\r\n", DefaultMaxDepth) + ":1\r\n",
		fmt.Sprintf("$%d\r\n%s\r\n", len(big), big),
		arr.String(),
		"*2\r\n" + fmt.Sprintf("$%d\r\n%s\r\n", 200000, big[:200000]) + "+after\r\n",
	}
	var stream []byte
	for _, r := range replies {
		stream = append(stream, r...)
	}
	want := receiveAll(t, redis.NewConn(&chunkConn{data: stream, chunk: 1 << 20}, 0, 0), len(replies))
	for _, chunk := range []int{1 << 20, 4096, 13} {
		g := NewConn(&chunkConn{data: stream, chunk: chunk}, RedisLimits)
		got := receiveAll(t, redis.NewConn(g, 0, 0), len(replies))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("chunks of %d: replies differ through the Conn", chunk)
		}
		if _, err := g.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("chunks of %d: after the replies %v, want io.EOF", chunk, err)
		}
	}
}

func receiveAll(t *testing.T, c redis.Conn, n int) []any {
	t.Helper()
	var out []any
	for range n {
		v, err := c.Receive()
		if _, ok := err.(redis.Error); err != nil && !ok {
			t.Fatalf("reply %d: %v", len(out), err)
		}
		out = append(out, v)
	}
	return out
}

// A close mid-reply is a ClosedError that says where; a close before any byte keeps the
// plain error (what a TLS-only server does to a plain client).
func TestClosedMidReply(t *testing.T) {
	g := NewConn(&chunkConn{data: []byte("*2\r\n$10\r\n12"), chunk: 64}, Limits{})
	_, err := redis.NewConn(g, 0, 0).Receive()
	var ce *ClosedError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "mid-reply: a bulk string of 10 bytes declared, 2 received") {
		t.Errorf("closed mid-reply: %v", err)
	}
	g = NewConn(&chunkConn{data: []byte("+OK\r\n"), chunk: 64}, Limits{})
	rc := redis.NewConn(g, 0, 0)
	rc.Receive()
	if _, err := rc.Receive(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "between replies, after 5 bytes") {
		t.Errorf("closed between replies: %v", err)
	}
	g = NewConn(&chunkConn{err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, Limits{})
	if _, err := redis.NewConn(g, 0, 0).Receive(); errors.As(err, &ce) || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reset before any byte: %v, want the plain reset", err)
	}
}

// scripted serves reply to the first command on a loopback connection, then writes drip
// every interval until the client goes away.
func scripted(t *testing.T, reply, drip string, every time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Read(make([]byte, 512))
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
		for every > 0 {
			time.Sleep(every)
			if _, err := io.WriteString(c, drip); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// A 14-byte header that declares 512 MiB (or an array of a million elements), then a
// byte every 20 ms: redigo, even with Redis's own limits, reserves nothing for it; at
// the deadline the reply is a ProtocolError that says how much of it came.
func TestDeclaredSizeIsNotReserved(t *testing.T) {
	for _, c := range []struct{ header, want string }{
		{"$536000000\r\n", "a bulk string of 536000000 bytes declared"},
		{"*1000000\r\n", "an array of 1000000 elements declared"},
	} {
		drip := "x"
		if c.header[0] == '*' {
			drip = ":1\r\n"
		}
		addr := scripted(t, c.header, drip, 20*time.Millisecond)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		conn, err := redis.Dial("tcp", addr, Dialer{Limits: RedisLimits}.DialOption(), redis.DialReadTimeout(400*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Do("TIME")
		runtime.ReadMemStats(&after)
		conn.Close()
		var pe *ProtocolError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "reply did not end before the deadline: ") {
			t.Errorf("%q: %v, want a ProtocolError naming the unfinished reply", c.header, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.header, err, c.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
			t.Errorf("%q: allocated %d MiB for a reply that sent a few bytes", c.header, grew>>20)
		}
		t.Logf("%v; allocated %d KiB", err, (after.TotalAlloc-before.TotalAlloc)>>10)
	}
}

// A deadline between replies is the plain timeout, and the Conn reads on after it.
func TestDeadlineBetweenReplies(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	g := NewConn(client, Limits{})
	g.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := g.Read(make([]byte, 8)); !os.IsTimeout(err) {
		t.Fatalf("idle read: %v, want a timeout", err)
	}
	g.SetReadDeadline(time.Time{})
	go io.WriteString(server, "+OK\r\n")
	if b, err := readN(g, 5); err != nil || string(b) != "+OK\r\n" {
		t.Errorf("after a timeout: %q %v", b, err)
	}
}

func readN(c *Conn, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	return b, err
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "-1": -1, "007": 7, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		if n, err := ParseInt([]byte(in)); n != want || err != nil {
			t.Errorf("ParseInt(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"", "-", "+1", "1a", " 1", "9223372036854775808", "-9223372036854775809", "99999999999999999999999"} {
		var pe *ProtocolError
		if _, err := ParseInt([]byte(in)); !errors.As(err, &pe) {
			t.Errorf("ParseInt(%q): %v, want a ProtocolError", in, err)
		}
	}
}

// The short path (1-18 digits) answers what the full parse answers, at every length
// and at the limits; past it the full parse decides.
func TestShortIntsParseAsTheFullParse(t *testing.T) {
	lim := Limits{MaxBulk: 100, MaxArray: 10}
	for _, in := range []string{"0", "7", "007", "10", "100", "101", "999999999999999999", "1000000000000000000",
		"9223372036854775807", "9223372036854775808", "1a", "a", "", "-1", "-2", "+1", "1 "} {
		full, ferr := parseInt([]byte(in), "integer")
		n, err := ParseInt([]byte(in))
		if n != full || (err == nil) != (ferr == nil) {
			t.Errorf("ParseInt(%q) = %d, %v; the full parse: %d, %v", in, n, err, full, ferr)
		}
		bn, berr := lim.BulkLen([]byte(in))
		fbn, fberr := lim.bulkLen([]byte(in))
		if bn != fbn || (berr == nil) != (fberr == nil) {
			t.Errorf("BulkLen(%q) = %d, %v; the full parse: %d, %v", in, bn, berr, fbn, fberr)
		}
		an, aerr := lim.ArrayLen([]byte(in))
		fan, faerr := lim.arrayLen([]byte(in))
		if an != fan || (aerr == nil) != (faerr == nil) {
			t.Errorf("ArrayLen(%q) = %d, %v; the full parse: %d, %v", in, an, aerr, fan, faerr)
		}
	}
	if _, err := (Limits{}).BulkLen([]byte("1048577")); err == nil {
		t.Error("BulkLen over the default limit, with no limit set: no error")
	}
}

// Under redigo's own TLS (a first write that is a TLS handshake record) the Conn
// stands aside: the bytes it reads are TLS records, not replies.
func TestTLSAboveStandsAside(t *testing.T) {
	records := "\x16\x03\x03\x00\x02\x02\x00"
	g := NewConn(&chunkConn{data: []byte(records), chunk: 3}, Limits{})
	g.Write([]byte("\x16\x03\x01\x00\x05hello"))
	if b, err := readN(g, len(records)); err != nil || string(b) != records {
		t.Errorf("read %q, %v; want the records untouched", b, err)
	}
}

// BenchmarkConn: redigo reading lock-sized replies (SET's +OK, a value, an integer)
// through the Conn and without it.
func BenchmarkConn(b *testing.B) {
	one := "+OK\r\n$47\r\nworker-1@app-3#0123456789abcdef0123456789abcdef\r\n:1\r\n"
	stream := []byte(strings.Repeat(one, 1000))
	for _, checked := range []bool{false, true} {
		b.Run(fmt.Sprintf("checked=%v", checked), func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				var nc net.Conn = &chunkConn{data: stream, chunk: 4096}
				if checked {
					nc = NewConn(nc, Limits{})
				}
				rc := redis.NewConn(nc, 0, 0)
				for range 3000 {
					if _, err := rc.Receive(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
