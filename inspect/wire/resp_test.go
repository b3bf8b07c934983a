package wire

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func respFrom(s string) *Conn {
	return &Conn{r: bufio.NewReader(strings.NewReader(s)), w: bufio.NewWriter(&bytes.Buffer{})}
}

func TestRESPReplies(t *testing.T) {
	c := respFrom("*2\r\n$1\r\n0\r\n*3\r\n$3\r\nabc\r\n$-1\r\n$0\r\n\r\n:-2\r\n:1234\r\n+string\r\n-WRONGTYPE Operation against a key\r\n$4\r\na\r\nb\r\n")
	if n, err := c.ReadArray(); n != 2 || err != nil {
		t.Fatalf("array: %d %v", n, err)
	}
	if b, err := c.ReadBulk(); string(b) != "0" || err != nil {
		t.Fatalf("cursor: %q %v", b, err)
	}
	if n, _ := c.ReadArray(); n != 3 {
		t.Fatalf("inner array %d", n)
	}
	first, _ := c.ReadBulk()
	if b, err := c.ReadBulk(); b != nil || err != nil {
		t.Errorf("nil bulk: %q %v", b, err)
	}
	if b, err := c.ReadBulk(); b == nil || len(b) != 0 || err != nil {
		t.Errorf("empty bulk: %q %v", b, err)
	}
	if string(first) != "abc" {
		t.Errorf("earlier bulk overwritten: %q", first)
	}
	if n, err := c.ReadInt(); n != -2 || err != nil {
		t.Errorf("int: %d %v", n, err)
	}
	if n, err := c.ReadInt(); n != 1234 || err != nil {
		t.Errorf("int: %d %v", n, err)
	}
	if s, err := c.ReadSimple(); s != "string" || err != nil {
		t.Errorf("simple: %q %v", s, err)
	}
	var rerr ReplyError
	if _, err := c.ReadBulk(); !errors.As(err, &rerr) || !strings.HasPrefix(string(rerr), "WRONGTYPE") {
		t.Errorf("error reply: %v", err)
	}
	if b, err := c.ReadBulk(); string(b) != "a\r\nb" || err != nil { // binary-safe
		t.Errorf("bulk with CRLF inside: %q %v", b, err)
	}
}

func TestRESPMalformed(t *testing.T) {
	for _, in := range []string{"", "$3\r\nab", "$x\r\n", ":12a\r\n", "*2\n", "$2\r\nabcd", "+ok\r\n"} {
		c := respFrom(in)
		if _, err := c.ReadBulk(); err == nil {
			t.Errorf("readBulk(%q): no error", in)
		}
	}
	if _, err := respFrom("$3\r\nabc\r\n").ReadInt(); err == nil {
		t.Errorf("a bulk read as an int")
	}
}

func TestRESPWrite(t *testing.T) {
	var out bytes.Buffer
	c := &Conn{w: bufio.NewWriter(&out)}
	c.Cmd("SCAN", "0", "MATCH", "*")
	c.KeyCmd("PTTL", []byte("k\x00"))
	c.Flush()
	want := "*4\r\n$4\r\nSCAN\r\n$1\r\n0\r\n$5\r\nMATCH\r\n$1\r\n*\r\n*2\r\n$4\r\nPTTL\r\n$2\r\nk\x00\r\n"
	if out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}
