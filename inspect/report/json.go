package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// WriteJSON writes s as one JSON object on one line (the `dump -o json` contract). The
// output is byte for byte what encoding/json (HTML escaping off) makes of the snapshot,
// but it is written as it is produced, a chunk of rows at a time: a snapshot of a
// million rows never exists as one document in memory.
func WriteJSON(w io.Writer, s *inspect.Snapshot) error {
	return writeJSON(w, s, snapshotRows(s.Resources, rowChunk))
}

// WriteJSONStream writes st as WriteJSON writes the same snapshot with its rows, byte
// for byte, building the rows while it writes them (Stream.Each).
func WriteJSONStream(w io.Writer, st *poll.Stream) error {
	return writeJSON(w, st.Snapshot, st.Each)
}

// rowSource hands rows to work a chunk at a time (maybe several chunks at once), and
// what work appended to out for each chunk to emit, in order: Stream.Each, or
// snapshotRows.
type rowSource func(work func(rows []inspect.Resource, out []byte) ([]byte, error), emit func(out []byte) error) error

// rowChunk is how many of a snapshot's rows snapshotRows hands out at a time.
const rowChunk = 1024

// snapshotRows is the rowSource of rows already built, chunk rows at a time
// (poll.EachRows).
func snapshotRows(rows []inspect.Resource, chunk int) rowSource {
	return func(work func([]inspect.Resource, []byte) ([]byte, error), emit func([]byte) error) error {
		return poll.EachRows(rows, chunk, work, emit)
	}
}

// writeJSON writes s with the rows of src in place of s.Resources. Everything around
// the rows is small: encoding/json writes it, with an empty row list that marks where
// the rows go, once before the rows and once after them (the summary that follows the
// rows may be counted while they are written). The marker cannot occur inside a JSON
// string (a quote there is always escaped), so its one occurrence is the field.
func writeJSON(w io.Writer, s *inspect.Snapshot, src rowSource) error {
	head, at, err := jsonAround(s)
	if err != nil {
		return err
	}
	ew := &errWriter{w: w}
	ew.Write(head[:at])
	first := true
	err = src(func(rows []inspect.Resource, out []byte) ([]byte, error) {
		for i := range rows {
			out = append(out, ',') // the first row's is dropped
			var err error
			if out, err = appendResource(out, &rows[i]); err != nil {
				return out, err
			}
			if i == 0 {
				out = growFor(out, len(rows))
			}
		}
		return out, nil
	}, func(out []byte) error {
		if first {
			out, first = out[1:], false
		}
		_, err := ew.Write(out)
		return err
	})
	if err != nil {
		return err
	}
	tail, at, err := jsonAround(s)
	if err != nil {
		return err
	}
	ew.Write(tail[at:])
	return ew.err
}

// growFor makes room in out, which holds a chunk's first row, for the chunk's n rows:
// one allocation, where growing as needed would allocate (and fault in) several times
// as much.
func growFor(out []byte, n int) []byte {
	if need := len(out) * n * 5 / 4; cap(out) < need {
		return slices.Grow(out, need-len(out))
	}
	return out
}

// jsonAround returns s encoded without rows, and the offset in it where the rows go.
func jsonAround(s *inspect.Snapshot) ([]byte, int, error) {
	c := *s
	if c.Masters == nil {
		c.Masters = []inspect.Master{}
	}
	if c.Findings == nil {
		c.Findings = []inspect.Finding{}
	}
	c.Resources = []inspect.Resource{}
	var doc bytes.Buffer
	enc := json.NewEncoder(&doc)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, 0, err
	}
	const marker = `,"resources":[]`
	at := bytes.Index(doc.Bytes(), []byte(marker))
	if at < 0 {
		return nil, 0, fmt.Errorf("report: no resources field in %.80q", doc.Bytes())
	}
	return doc.Bytes(), at + len(marker) - 1, nil // before the closing bracket
}

// fastRows says whether appendResource knows every JSON field of a row; when a field
// was added to Resource, Node or Anomaly without teaching it, rows go through
// encoding/json one at a time instead (slower, still streamed, still exact).
var fastRows = knownFields(reflect.TypeFor[inspect.Resource](), "resource", "key", "state", "value", "owner", "token",
	"library", "kind", "library_evidence", "scope", "instances", "permits", "permit_limit", "available_permits", "holders", "uncertain", "validity_ms", "ttl_spread_ms", "anomalies", "nodes") &&
	knownFields(reflect.TypeFor[inspect.Node](), "master", "value", "pttl_ms", "type", "error", "error_kind", "last_seen") &&
	knownFields(reflect.TypeFor[inspect.Anomaly](), "code", "master", "message")

// knownFields reports whether t's JSON field names are exactly names, in order.
func knownFields(t reflect.Type, names ...string) bool {
	var got []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "-" {
				got = append(got, name)
			}
		}
	}
	return slices.Equal(got, names)
}

// appendResource appends r's JSON: what Resource.MarshalJSON produces (its strings
// HTML-escaped, as encoding/json does inside a MarshalJSON method).
func appendResource(b []byte, r *inspect.Resource) ([]byte, error) {
	if !fastRows {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			return b, err
		}
		return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
	}
	b = append(b, `{"resource":`...)
	b = appendString(b, r.Resource)
	b = append(b, `,"key":`...)
	b = appendString(b, r.Key)
	b = append(b, `,"state":`...)
	b = appendString(b, r.State)
	b = append(b, `,"value":`...)
	b = appendString(b, r.Value)
	b = append(b, `,"owner":`...)
	b = appendString(b, r.Owner)
	b = append(b, `,"token":`...)
	b = strconv.AppendInt(b, r.Token, 10)
	b = append(b, `,"library":`...)
	b = appendString(b, r.Library)
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind)
	b = append(b, `,"library_evidence":`...)
	b = appendString(b, r.LibraryEvidence)
	b = append(b, `,"scope":`...)
	b = appendString(b, r.Scope)
	if len(r.Instances) > 0 {
		b = append(b, `,"instances":[`...)
		for i, m := range r.Instances {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m)
		}
		b = append(b, ']')
	}
	if r.Permits != 0 {
		b = append(b, `,"permits":`...)
		b = strconv.AppendInt(b, int64(r.Permits), 10)
	}
	if r.PermitLimit != 0 {
		b = append(b, `,"permit_limit":`...)
		b = strconv.AppendInt(b, int64(r.PermitLimit), 10)
	}
	if r.AvailablePermits != nil {
		b = append(b, `,"available_permits":`...)
		b = strconv.AppendInt(b, int64(*r.AvailablePermits), 10)
	}
	b = append(b, `,"holders":`...)
	b = strconv.AppendInt(b, int64(r.Holders), 10)
	b = append(b, `,"uncertain":`...)
	b = strconv.AppendBool(b, r.Uncertain)
	b = append(b, `,"validity_ms":`...)
	b = strconv.AppendInt(b, r.ValidityMs, 10)
	b = append(b, `,"ttl_spread_ms":`...)
	b = strconv.AppendInt(b, r.TTLSpreadMs, 10)
	b = append(b, `,"anomalies":[`...)
	for i := range r.Anomalies {
		a := &r.Anomalies[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"code":`...)
		b = appendString(b, a.Code)
		if a.Master != "" {
			b = append(b, `,"master":`...)
			b = appendString(b, a.Master)
		}
		b = append(b, `,"message":`...)
		b = appendString(b, a.Message)
		b = append(b, '}')
	}
	b = append(b, `],"nodes":[`...)
	for i := range r.Nodes {
		n := &r.Nodes[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"master":`...)
		b = appendString(b, n.Master)
		b = append(b, `,"value":`...)
		b = appendString(b, n.Value)
		b = append(b, `,"pttl_ms":`...)
		b = strconv.AppendInt(b, n.PTTLMs, 10)
		b = append(b, `,"type":`...)
		b = appendString(b, n.Type)
		b = append(b, `,"error":`...)
		b = appendString(b, n.Error)
		if n.ErrorKind != errkind.None {
			b = append(b, `,"error_kind":`...)
			b = appendString(b, n.ErrorKind.String())
		}
		if ls := n.LastSeen; ls != nil {
			b = append(b, `,"last_seen":{"master":`...)
			b = appendString(b, ls.Master)
			b = append(b, `,"at":"`...)
			b = ls.At.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `","projected_pttl_ms":`...)
			b = strconv.AppendInt(b, ls.ProjectedPTTLMs, 10)
			b = append(b, '}')
		}
		if !utf8.ValidString(n.Value) {
			b = append(b, `,"value_b64":`...)
			b = appendB64(b, n.Value)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	for _, f := range [...]struct{ name, s string }{{`,"resource_b64":`, r.Resource}, {`,"key_b64":`, r.Key}, {`,"value_b64":`, r.Value}} {
		if !utf8.ValidString(f.s) {
			b = append(b, f.name...)
			b = appendB64(b, f.s)
		}
	}
	return append(b, '}'), nil
}

func appendB64(b []byte, s string) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, []byte(s))
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// plainJSON says which ASCII bytes appendString copies as they are.
var plainJSON = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// plainRun returns how many leading bytes of s are plainJSON, counted in whole
// words of 8 that it tests at once: no byte at or above 0x80, none below 0x20, none
// of " & < > \ (a byte equal to one of these is found by xoring it in and looking for
// a zero byte; " and &, < and > differ by one bit each, so each pair is one test).
// appendString checks the bytes after those one by one.
func plainRun(s string) int {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) &^ v & high } // a byte of v is 0
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		nonASCII := w & high
		control := (w - 0x20*ones) &^ w & high
		quoteAmp := zero((w | 0x04*ones) ^ 0x26*ones) // " or &
		angle := zero((w | 0x02*ones) ^ 0x3e*ones)    // < or >
		backslash := zero(w ^ 0x5c*ones)
		if nonASCII|control|quoteAmp|angle|backslash != 0 {
			break
		}
	}
	return i
}

// appendString appends s as a JSON string exactly as encoding/json does with HTML
// escaping on: <, > and & as \u00XX, control bytes as short or \u00XX escapes,
// U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := plainRun(s); i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainJSON[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			i += plainRun(s[i:])
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
		i += plainRun(s[i:])
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
