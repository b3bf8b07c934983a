package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// encodeWhole is what WriteJSON wrote before it streamed: encoding/json on the whole
// snapshot, HTML escaping off. The streamed output must stay byte for byte the same.
func encodeWhole(t *testing.T, s *inspect.Snapshot) []byte {
	t.Helper()
	c := *s
	if c.Masters == nil {
		c.Masters = []inspect.Master{}
	}
	if c.Resources == nil {
		c.Resources = []inspect.Resource{}
	}
	if c.Findings == nil {
		c.Findings = []inspect.Finding{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// awkward strings: HTML characters, every control byte, quotes and backslashes,
// U+2028/U+2029, invalid UTF-8, multi-byte runes.
var awkward = []string{"", "plain", "<a href=\"x\">&amp;</a>", "tab\there\nnew\rline\b\f", "\x00\x01\x1f\x7f",
	"back\\slash \"quoted\"", "line\u2028para\u2029end", "\xff\xfe bin\x01", "héllo wörld ☃ 𝄞", "bad\xc3(", "\xed\xa0\x80surrogate"}

func randomString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return awkward[r.IntN(len(awkward))]
	}
	var b strings.Builder
	for range r.IntN(24) {
		switch r.IntN(6) {
		case 0:
			b.WriteByte(byte(r.IntN(256)))
		case 1:
			b.WriteRune(rune(r.IntN(0x3000)))
		default:
			b.WriteByte(byte(0x20 + r.IntN(0x60)))
		}
	}
	return b.String()
}

func randomSnapshot(r *rand.Rand, rows int) *inspect.Snapshot {
	rate := 12.5
	s := &inspect.Snapshot{TakenAt: time.Date(2026, 3, 14, 15, 9, 26, 535_000_001, time.UTC), Quorum: 3, Complete: r.IntN(2) == 0,
		Masters: []inspect.Master{{Name: "m1", Addr: "10.0.0.1:6379", Up: true, RTTMs: 0.123, ClockRatePPM: &rate},
			{Name: "m<2>", Addr: "10.0.0.2:6379", Error: "dial & fail", Findings: []inspect.Finding{{Code: "down", Severity: "crit", Master: "m<2>", Message: "a<b", Fix: "x&y"}}}},
		Findings: []inspect.Finding{{Code: "even-masters", Severity: "warn", Message: "<odd> & even", Fix: "use 3"}},
		Summary:  inspect.Summary{Resources: rows, Held: 1, MastersUp: 1, Findings: 2}}
	for i := range rows {
		res := inspect.Resource{Resource: randomString(r), Key: randomString(r), State: inspect.StateHeld, Value: randomString(r),
			Owner: randomString(r), Token: r.Int64N(1 << 40), Library: randomString(r), Kind: randomString(r), LibraryEvidence: randomString(r), Holders: r.IntN(6), Uncertain: r.IntN(2) == 0,
			ValidityMs: r.Int64N(1<<33) - 5, TTLSpreadMs: r.Int64N(100)}
		if i%7 != 3 {
			res.Anomalies = []inspect.Anomaly{}
		}
		for range r.IntN(3) {
			a := inspect.Anomaly{Code: "stray-value", Message: randomString(r)}
			if r.IntN(2) == 0 {
				a.Master = randomString(r)
			}
			res.Anomalies = append(res.Anomalies, a)
		}
		if i%11 != 5 {
			for m := range 5 {
				n := inspect.Node{Master: "m" + string(rune('1'+m)), Value: randomString(r),
					PTTLMs: r.Int64N(1<<31) - 2, Type: inspect.TypeString, Error: randomString(r), ErrorKind: errkind.Kind(r.IntN(8))}
				if r.IntN(4) == 0 {
					n.LastSeen = &inspect.LastSeen{Master: randomString(r), At: s.TakenAt.Add(-time.Duration(r.Int64N(1 << 40))), ProjectedPTTLMs: r.Int64N(1<<31) - 1}
				}
				res.Nodes = append(res.Nodes, n)
			}
		}
		s.Resources = append(s.Resources, res)
	}
	return s
}

// TestWriteJSONMatchesEncodingJSON: the streamed JSON is byte-identical to
// encoding/json's for awkward strings, nil and empty lists, binary values (the
// *_b64 fields), and large snapshots that span many output chunks.
func TestWriteJSONMatchesEncodingJSON(t *testing.T) {
	if !fastRows {
		t.Fatal("Resource, Node or Anomaly has a JSON field that appendResource (inspect/report/json.go) does not write: add it there, in field order (rows fall back to encoding/json until then)")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, rows := range []int{0, 1, 7, 300, 5000} {
		s := randomSnapshot(r, rows)
		var got bytes.Buffer
		if err := WriteJSON(&got, s); err != nil {
			t.Fatal(err)
		}
		want := encodeWhole(t, s)
		if !bytes.Equal(got.Bytes(), want) {
			i := 0
			for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
				i++
			}
			t.Fatalf("%d rows: differs at byte %d:\n got ...%q\nwant ...%q", rows, i,
				got.Bytes()[max(0, i-80):min(got.Len(), i+80)], want[max(0, i-80):min(len(want), i+80)])
		}
	}
	// Nil lists at the top are written as empty lists.
	var got bytes.Buffer
	if err := WriteJSON(&got, &inspect.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	if want := encodeWhole(t, &inspect.Snapshot{}); !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("empty snapshot:\n got %s\nwant %s", got.Bytes(), want)
	}
}

// TestWriteJSONStreams: a large snapshot reaches the writer in many chunks, none larger
// than a chunk of rows, instead of one document.
func TestWriteJSONStreams(t *testing.T) {
	s := randomSnapshot(rand.New(rand.NewPCG(3, 4)), 20000)
	w := &chunkSizes{}
	if err := WriteJSON(w, s); err != nil {
		t.Fatal(err)
	}
	if len(w.sizes) < 10 {
		t.Fatalf("%d writes for %d rows: not streamed", len(w.sizes), len(s.Resources))
	}
	longest := 0
	for i := range s.Resources {
		b, err := appendResource(nil, &s.Resources[i])
		if err != nil {
			t.Fatal(err)
		}
		longest = max(longest, len(b)+1)
	}
	for _, n := range w.sizes {
		if n > rowChunk*longest+4096 {
			t.Fatalf("a write of %d bytes: more than %d rows of at most %d bytes", n, rowChunk, longest)
		}
	}
}

type chunkSizes struct{ sizes []int }

func (c *chunkSizes) Write(p []byte) (int, error) {
	c.sizes = append(c.sizes, len(p))
	return len(p), nil
}
