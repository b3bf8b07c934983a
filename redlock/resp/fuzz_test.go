package resp

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// fuzzLimits are small, so that short inputs reach every limit.
var fuzzLimits = Limits{MaxBulk: 300, MaxArray: 40, MaxDepth: 4, MaxLine: 60}

// FuzzConn: for any bytes a server sends, in any chunking, the Conn (1) agrees with a
// plain recursive reference parser on whether they break a rule, (2) lets through a
// prefix of them, all of them when they end on a reply boundary and break nothing, and
// (3) keeps redigo, reading through it, from panicking. Run longer with
// go test -fuzz FuzzConn ./redlock/resp/.
func FuzzConn(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":-12\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n",
		"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$-1\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
		"$99999999999999999999\r\n", "$9223372036854775808\r\n", "$18446744073709551617\r\n",
		"$99999999999\r\n", "*99999999999\r\n", "$-5\r\n", "*2\r\n$10\r\n12", "$536000000\r\nxx",
		"+" + strings.Repeat("a", 70) + "\r\n", "$3\r\nabcd\r\n", "+OK\n", "\x16\x03\x01\x02\x00",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "$301\r\n", "*41\r\n", ":1\r2\r\n", "$-0\r\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		size := int(chunk)%16 + 1
		if chunk == 0 {
			size = len(data) + 1
		}
		g := NewConn(&chunkConn{data: data, chunk: size}, fuzzLimits)
		got, err := readAll(g)
		var pe *ProtocolError
		broken := errors.As(err, &pe)
		end, refErr := refParse(data, fuzzLimits)
		if broken != (refErr != "") {
			t.Fatalf("%q: Conn says %v, reference says %q", data, err, refErr)
		}
		if !bytes.HasPrefix(data, got) {
			t.Fatalf("%q: let through %q, not a prefix", data, got)
		}
		if !broken && end == len(data) && len(got) != len(data) {
			t.Fatalf("%q: whole replies, but only %q let through (%v)", data, got, err)
		}
		rc := redis.NewConn(NewConn(&chunkConn{data: data, chunk: size}, fuzzLimits), 0, 0)
		for range 64 {
			if _, err := rc.Receive(); err != nil {
				if _, ok := err.(redis.Error); !ok {
					break
				}
			}
		}
	})
}

// refParse parses data as RESP2 replies under l, the plain way: it returns the offset
// past the last whole reply and the rule broken first ("" for none: data just ends).
func refParse(data []byte, l Limits) (int, string) {
	l = l.orDefault()
	end := 0
	for end < len(data) {
		next, err := refValue(data, end, l, 0)
		if err != "" || next < 0 {
			return end, err
		}
		end = next
	}
	return end, ""
}

// refValue parses the value at i; it returns the offset past it (-1 when data ends
// first) or the rule it breaks.
func refValue(data []byte, i int, l Limits, depth int) (int, string) {
	if i >= len(data) {
		return -1, ""
	}
	typ := data[i]
	if !strings.ContainsRune("+-:$*", rune(typ)) {
		return 0, "type"
	}
	rest := data[i+1:]
	lf := bytes.IndexByte(rest, '\n')
	line := rest
	if lf >= 0 {
		line = rest[:lf]
	}
	if len(line) > l.MaxLine+1 {
		return 0, "line too long"
	}
	numeric := typ == ':' || typ == '$' || typ == '*'
	if numeric && len(line) > maxNumLen {
		return 0, "number too long"
	}
	if lf < 0 {
		return -1, ""
	}
	if len(line) == 0 || line[len(line)-1] != '\r' {
		return 0, "no CR"
	}
	text := line[:len(line)-1]
	next := i + 1 + lf + 1
	switch typ {
	case '+', '-':
		return next, ""
	case ':':
		if _, err := ParseInt(text); err != nil {
			return 0, "integer"
		}
		return next, ""
	case '$':
		n, err := l.BulkLen(text)
		if err != nil {
			return 0, "bulk length"
		}
		if n < 0 {
			return next, ""
		}
		if len(data) < next+int(n)+2 {
			if len(data) > next+int(n) && data[next+int(n)] != '\r' {
				return 0, "no CRLF"
			}
			return -1, ""
		}
		if data[next+int(n)] != '\r' || data[next+int(n)+1] != '\n' {
			return 0, "no CRLF"
		}
		return next + int(n) + 2, ""
	}
	n, err := l.ArrayLen(text)
	if err != nil {
		return 0, "array length"
	}
	if n <= 0 {
		return next, ""
	}
	if depth+1 > l.MaxDepth {
		return 0, "too deep"
	}
	for range n {
		var e string
		if next, e = refValue(data, next, l, depth+1); e != "" || next < 0 {
			return next, e
		}
	}
	return next, ""
}
