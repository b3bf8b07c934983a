package wire

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func TestRawTCPMovesBytesBothWays(t *testing.T) {
	c, s := tcpPair(t)
	rw := newRawTCP(c)
	if _, ok := rw.(*rawTCP); !ok {
		t.Fatalf("newRawTCP(TCP) = %T, want *rawTCP", rw)
	}
	// Far more than the socket buffers hold, read slowly at first: writes must wait
	// for room and resume where they stopped.
	out := make([]byte, 16<<20)
	for i := range out {
		out[i] = byte(rand.Uint32())
	}
	got := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for b.Len() < len(out) {
			if b.Len() < 1<<20 {
				time.Sleep(time.Millisecond)
			}
			n, err := s.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
	}()
	c.SetDeadline(time.Now().Add(time.Minute))
	if n, err := rw.Write(out); n != len(out) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(out))
	}
	if b := <-got; !bytes.Equal(b, out) {
		t.Fatalf("peer read %d bytes, not the %d written in order", len(b), len(out))
	}

	// Reads wait for data and return what arrived, in order, then EOF.
	go func() {
		for i := 0; i < len(out); i += 1 << 20 {
			s.Write(out[i : i+1<<20])
			time.Sleep(time.Millisecond)
		}
		s.CloseWrite()
	}()
	in, err := io.ReadAll(rw)
	if err != nil || !bytes.Equal(in, out) {
		t.Fatalf("ReadAll = %d bytes, %v; want the %d bytes sent, nil", len(in), err, len(out))
	}
	if n, err := rw.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF = %d, %v; want 0, EOF", n, err)
	}
}

func TestRawTCPHonoursDeadlinesAndReportsErrors(t *testing.T) {
	c, s := tcpPair(t)
	rw := newRawTCP(c)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	n, err := rw.Read(make([]byte, 10))
	if n != 0 || !IsTimeout(err) || !strings.HasPrefix(err.Error(), "read tcp ") {
		t.Fatalf("Read past its deadline = %d, %v; want 0 and a read timeout", n, err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("Read gave up after %v, before its deadline", d)
	}

	// Bytes that came before the deadline are read after it too (a busy machine got to
	// them late); once they are read, the wait for more ends at the deadline.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Write([]byte("+PONG\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	buf := make([]byte, 4)
	for _, want := range []string{"+PON", "G\r\n"} {
		if n, err := rw.Read(buf); err != nil || string(buf[:n]) != want {
			t.Fatalf("Read of bytes that came in time, past the deadline = %q, %v; want %q, nil", buf[:n], err, want)
		}
	}
	if n, err := rw.Read(buf); n != 0 || !IsTimeout(err) {
		t.Fatalf("Read past the deadline with nothing come = %d, %v; want a read timeout", n, err)
	}

	// A peer that resets the connection: the error says so, and is not a timeout.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s.SetLinger(0)
	s.Close()
	_, err = rw.Read(make([]byte, 10))
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "read" || IsTimeout(err) {
		t.Fatalf("Read from a reset connection = %v; want a read OpError", err)
	}
	if _, err := rw.Write(make([]byte, 1<<20)); err == nil {
		t.Fatal("Write to a reset connection succeeded")
	}
}

func TestRawTCPLeavesOtherConnsAlone(t *testing.T) {
	c, _ := tcpPair(t)
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	if rw := newRawTCP(tc); rw != io.ReadWriter(tc) {
		t.Fatalf("newRawTCP(TLS) = %T, want the TLS conn itself", rw)
	}
}
