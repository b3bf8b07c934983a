package resp

import (
	"bytes"
	"fmt"
)

// Scanner states: what the next byte is.
const (
	stType = iota // the type byte of a value
	stLine        // a header or simple line, up to its LF
	stBody        // the bytes of a bulk string
	stCR          // the CR after a bulk string
	stLF          // the LF after a bulk string
)

// maxNumLen is the longest numeric line kept for parsing (with its CR): enough for any
// int64 and for the 20-digit overflows seen in the wild, which are then named.
const maxNumLen = 32

// scanner follows the framing of a stream of RESP2 replies, byte range by byte range,
// in constant memory per nesting level: it never stores a value, only where it is. It
// also works out the release point: how far the stream may be handed to a reader that
// reserves what a header declares (see hold).
type scanner struct {
	lim   Limits
	pos   int64 // stream offset of the next byte
	state int
	typ   byte  // type byte of the current value
	start int64 // stream offset of the current value's type byte
	num   [maxNumLen]byte
	nlen  int   // bytes of a numeric line kept in num (with its CR)
	llen  int   // bytes of the current line so far, type byte excluded
	cr    bool  // the line's last byte so far is a CR
	blen  int64 // declared length of the current bulk string
	body  int64 // its bytes still to come
	stack []frame
	holds []hold
	err   *ProtocolError
	errAt int64 // stream offset of the value that broke the rules
}

// frame is an open array.
type frame struct {
	n, left int64 // declared elements, elements still to come
	start   int64 // stream offset of its header
}

// hold keeps a header, and what follows it, from the reader above until the bytes
// received after it cover what the header makes that reader reserve (until), or the
// value it opens is complete. The reader reserves nothing it cannot parse, and it
// cannot parse a header it has not received.
type hold struct {
	at    int64 // stream offset of the header's type byte
	until int64 // released once the scanner has passed this offset
}

func newScanner(l Limits) *scanner { return &scanner{lim: l.orDefault()} }

// midReply reports whether the stream stops inside a reply.
func (s *scanner) midReply() bool { return s.state != stType || len(s.stack) > 0 }

// release is the stream offset up to which bytes may be handed on: everything scanned,
// except from the first held header on, and nothing from a value that broke the rules.
func (s *scanner) release() int64 {
	r := s.pos
	if len(s.holds) > 0 {
		r = s.holds[0].at
	}
	if s.err != nil {
		r = min(r, s.errAt)
	}
	return r
}

// feed scans the next bytes of the stream. After an error it scans nothing more.
func (s *scanner) feed(b []byte) {
	base := s.pos
	i := 0
	for i < len(b) && s.err == nil {
		switch s.state {
		case stType:
			s.start, s.typ = base+int64(i), b[i]
			switch b[i] {
			case '+', '-', ':', '$', '*':
			case 0x15, 0x16: // a TLS alert or handshake record
				if s.start == 0 {
					s.fail(protoErr("the server answered with a TLS record (a TLS-only port? dial it with TLS)"))
					continue
				}
				fallthrough
			default:
				s.fail(protoErr("unknown reply type byte %q", b[i:i+1]))
				continue
			}
			s.state, s.llen, s.nlen, s.cr = stLine, 0, 0, false
			i++
		case stLine:
			seg := b[i:]
			j := bytes.IndexByte(seg, '\n')
			if j >= 0 {
				seg = seg[:j]
			}
			if s.lineBytes(seg) {
				continue
			}
			if j < 0 {
				i = len(b)
				continue
			}
			i += j + 1
			if !s.cr {
				s.fail(protoErr("a %q line ends without CR before its LF", s.typ))
				continue
			}
			s.endLine(base + int64(i))
		case stBody:
			k := min(int64(len(b)-i), s.body)
			i += int(k)
			if s.body -= k; s.body == 0 {
				s.state = stCR
			}
		case stCR, stLF:
			want := byte('\r')
			if s.state == stLF {
				want = '\n'
			}
			if b[i] != want {
				s.fail(protoErr("bulk string of %d bytes is not followed by CRLF", s.blen))
				continue
			}
			i++
			if s.state == stCR {
				s.state = stLF
			} else {
				s.done(s.start)
			}
		}
	}
	s.pos = base + int64(len(b))
	// Holds whose bytes are in.
	k := 0
	for _, h := range s.holds {
		if h.until > s.pos {
			s.holds[k] = h
			k++
		}
	}
	s.holds = s.holds[:k]
}

// lineBytes takes bytes of the current line (without its LF) and reports whether they
// broke a rule.
func (s *scanner) lineBytes(seg []byte) bool {
	if len(seg) == 0 {
		return false
	}
	s.llen += len(seg)
	s.cr = seg[len(seg)-1] == '\r'
	if s.llen > s.lim.MaxLine+1 { // +1: its CR
		s.fail(protoErr("a %q line is longer than %s", s.typ, size(int64(s.lim.MaxLine))))
		return true
	}
	if s.typ == '+' || s.typ == '-' {
		return false
	}
	n := copy(s.num[s.nlen:], seg)
	s.nlen += n
	if n < len(seg) {
		s.fail(protoErr("%s %s is longer than any int64", numName(s.typ), quote(s.num[:s.nlen])))
		return true
	}
	return false
}

func numName(typ byte) string {
	switch typ {
	case '$':
		return "bulk length"
	case '*':
		return "array length"
	}
	return "integer"
}

// endLine acts on a complete line; after is the offset past its LF.
func (s *scanner) endLine(after int64) {
	digits := s.num[:max(s.nlen-1, 0)]
	switch s.typ {
	case '+', '-':
		s.done(s.start)
	case ':':
		if _, err := ParseInt(digits); err != nil {
			s.fail(err.(*ProtocolError))
			return
		}
		s.done(s.start)
	case '$':
		n, err := s.lim.BulkLen(digits)
		if err != nil {
			s.fail(err.(*ProtocolError))
			return
		}
		if n < 0 {
			s.done(s.start)
			return
		}
		s.blen, s.body, s.state = n, n, stBody
		if n == 0 {
			s.state = stCR
		}
		if n > Unbacked {
			s.holds = append(s.holds, hold{at: s.start, until: after + n - Unbacked})
		}
	case '*':
		n, err := s.lim.ArrayLen(digits)
		if err != nil {
			s.fail(err.(*ProtocolError))
			return
		}
		if n <= 0 {
			s.done(s.start)
			return
		}
		if len(s.stack) >= s.lim.MaxDepth {
			s.fail(protoErr("arrays nested deeper than %d levels", s.lim.MaxDepth))
			return
		}
		s.stack = append(s.stack, frame{n: n, left: n, start: s.start})
		s.state = stType
		if cost := n * elemCost; cost > Unbacked {
			s.holds = append(s.holds, hold{at: s.start, until: after + cost - Unbacked})
		}
	}
}

// done ends the value that started at start, and every array it completes.
func (s *scanner) done(start int64) {
	s.state = stType
	s.unhold(start)
	for len(s.stack) > 0 {
		top := &s.stack[len(s.stack)-1]
		if top.left--; top.left > 0 {
			return
		}
		start = top.start
		s.stack = s.stack[:len(s.stack)-1]
		s.unhold(start)
	}
}

// unhold drops the holds of a complete value that started at start (its own and those
// of values inside it).
func (s *scanner) unhold(start int64) {
	k := len(s.holds)
	for k > 0 && s.holds[k-1].at >= start {
		k--
	}
	s.holds = s.holds[:k]
}

func (s *scanner) fail(e *ProtocolError) {
	s.err, s.errAt = e, s.start
}

// pending describes the unfinished reply the stream stops in ("" at a reply boundary).
func (s *scanner) pending() string {
	switch {
	case s.state == stBody || s.state == stCR || s.state == stLF:
		return Incomplete("bulk", s.blen, s.blen-s.body)
	case s.state == stLine:
		return fmt.Sprintf("a %q line of %d bytes so far without its CRLF", s.typ, s.llen)
	case len(s.stack) > 0:
		top := s.stack[len(s.stack)-1]
		return Incomplete("array", top.n, top.n-top.left)
	}
	return ""
}
