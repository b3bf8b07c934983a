package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

// tabwriterRows is how the resource table was written before it streamed: every row
// through text/tabwriter. writeResources must stay byte for byte the same.
func tabwriterRows(rows []inspect.Resource) []byte {
	var b bytes.Buffer
	t := newTable(&b)
	fmt.Fprintln(t, "RESOURCE\tSTATE\tOWNER\tHOLDERS\tVALIDITY\tSPREAD\tTOKEN\tANOMALIES")
	for i := range rows {
		r := &rows[i]
		state := r.State
		if r.Uncertain {
			state += "?"
		}
		owner := r.Owner
		if owner == "" && r.Value != "" {
			owner = `"` + Display(r.Value, ownerWidth-2) + `"`
		} else {
			owner = Display(owner, ownerWidth)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n",
			Display(r.Resource, resourceWidth), state, dash(owner), r.Holders, len(r.Nodes),
			validity(r), spread(r), token(r.Token), anomalies(r.Anomalies))
	}
	t.Flush()
	return b.Bytes()
}

// TestWriteResourcesMatchesTabwriter: the streamed resource table is aligned exactly
// as text/tabwriter aligned it, for awkward names (escapes, wide runes, truncation),
// every state, and tables longer than one output chunk.
func TestWriteResourcesMatchesTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	states := []string{inspect.StateHeld, inspect.StatePartial, inspect.StateSplit, inspect.StateNoTTL, inspect.StateForeign, inspect.StateFree}
	for _, n := range []int{0, 1, 50, 4000} {
		s := randomSnapshot(r, n)
		for i := range s.Resources {
			res := &s.Resources[i]
			res.State = states[r.IntN(len(states))]
			if r.IntN(3) == 0 {
				res.Owner = ""
			}
			if r.IntN(4) == 0 {
				res.Resource = fmt.Sprintf("lock:job:%d", r.IntN(1<<30))
			}
			for j := range res.Anomalies {
				res.Anomalies[j].Master = []string{"", "m1", "master-two"}[r.IntN(3)]
			}
		}
		var got bytes.Buffer
		rows, uncertain, err := writeResources(&got, snapshotRows(s.Resources, 7)) // many chunks
		if err != nil || rows != n {
			t.Fatalf("%d rows: writeResources counted %d rows, error %v", n, rows, err)
		}
		want := tabwriterRows(s.Resources)
		if !bytes.Equal(got.Bytes(), want) {
			i := 0
			for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
				i++
			}
			t.Fatalf("%d rows: differs at byte %d:\n got ...%q\nwant ...%q", n, i,
				got.Bytes()[max(0, i-120):min(got.Len(), i+80)], want[max(0, i-120):min(len(want), i+80)])
		}
		wantUncertain := false
		for i := range s.Resources {
			wantUncertain = wantUncertain || s.Resources[i].Uncertain
		}
		if uncertain != wantUncertain {
			t.Fatalf("%d rows: uncertain %v, want %v", n, uncertain, wantUncertain)
		}
	}
}

// TestDisplayPlainASCII: the allocation-free path for printable ASCII gives what the
// escaping path gives.
func TestDisplayPlainASCII(t *testing.T) {
	slow := func(s string, width int) string {
		out := escape(s, 4*width+8)
		if len([]rune(out)) <= width {
			return out
		}
		if width <= 3 {
			return string([]rune(out)[:width])
		}
		return string([]rune(out)[:width-3]) + "..."
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		b := make([]byte, r.IntN(60))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x5f))
		}
		s, width := string(b), r.IntN(45)
		if got, want := Display(s, width), slow(s, width); got != want {
			t.Fatalf("Display(%q, %d) = %q, want %q", s, width, got, want)
		}
	}
}

// The cells of the reference, as the table wrote them with fmt.

func validity(r *inspect.Resource) string {
	if r.State != inspect.StateHeld {
		return "-"
	}
	return inspect.Duration(time.Duration(r.ValidityMs) * time.Millisecond)
}

func spread(r *inspect.Resource) string {
	if r.Value == "" {
		return "-"
	}
	return inspect.Duration(time.Duration(r.TTLSpreadMs) * time.Millisecond)
}

// token is the TOKEN cell: the fencing token, or "-".
func token(t int64) string {
	if t == 0 {
		return "-"
	}
	return strconv.FormatInt(t, 10)
}

func anomalies(as []inspect.Anomaly) string {
	if len(as) == 0 {
		return "-"
	}
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.Code
		if a.Master != "" {
			parts[i] += "@" + a.Master
		}
	}
	return strings.Join(parts, ",")
}
