package inspect

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func respFrom(s string) *respConn {
	return &respConn{r: bufio.NewReader(strings.NewReader(s)), w: bufio.NewWriter(&bytes.Buffer{})}
}

func TestRESPReplies(t *testing.T) {
	c := respFrom("*2\r\n$1\r\n0\r\n*3\r\n$3\r\nabc\r\n$-1\r\n$0\r\n\r\n:-2\r\n:1234\r\n+string\r\n-WRONGTYPE Operation against a key\r\n$4\r\na\r\nb\r\n")
	if n, err := c.readArray(); n != 2 || err != nil {
		t.Fatalf("array: %d %v", n, err)
	}
	if b, err := c.readBulk(); string(b) != "0" || err != nil {
		t.Fatalf("cursor: %q %v", b, err)
	}
	if n, _ := c.readArray(); n != 3 {
		t.Fatalf("inner array %d", n)
	}
	first, _ := c.readBulk()
	if b, err := c.readBulk(); b != nil || err != nil {
		t.Errorf("nil bulk: %q %v", b, err)
	}
	if b, err := c.readBulk(); b == nil || len(b) != 0 || err != nil {
		t.Errorf("empty bulk: %q %v", b, err)
	}
	if string(first) != "abc" {
		t.Errorf("earlier bulk overwritten: %q", first)
	}
	if n, err := c.readInt(); n != -2 || err != nil {
		t.Errorf("int: %d %v", n, err)
	}
	if n, err := c.readInt(); n != 1234 || err != nil {
		t.Errorf("int: %d %v", n, err)
	}
	if s, err := c.readSimple(); s != "string" || err != nil {
		t.Errorf("simple: %q %v", s, err)
	}
	var rerr respError
	if _, err := c.readBulk(); !errors.As(err, &rerr) || !strings.HasPrefix(string(rerr), "WRONGTYPE") {
		t.Errorf("error reply: %v", err)
	}
	if b, err := c.readBulk(); string(b) != "a\r\nb" || err != nil { // binary-safe
		t.Errorf("bulk with CRLF inside: %q %v", b, err)
	}
}

func TestRESPMalformed(t *testing.T) {
	for _, in := range []string{"", "$3\r\nab", "$x\r\n", ":12a\r\n", "*2\n", "$2\r\nabcd", "+ok\r\n"} {
		c := respFrom(in)
		if _, err := c.readBulk(); err == nil {
			t.Errorf("readBulk(%q): no error", in)
		}
	}
	if _, err := respFrom("$3\r\nabc\r\n").readInt(); err == nil {
		t.Errorf("a bulk read as an int")
	}
}

func TestRESPWrite(t *testing.T) {
	var out bytes.Buffer
	c := &respConn{w: bufio.NewWriter(&out)}
	c.cmd("SCAN", "0", "MATCH", "*")
	c.keyCmd("PTTL", []byte("k\x00"))
	c.flush()
	want := "*4\r\n$4\r\nSCAN\r\n$1\r\n0\r\n$5\r\nMATCH\r\n$1\r\n*\r\n*2\r\n$4\r\nPTTL\r\n$2\r\nk\x00\r\n"
	if out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}
