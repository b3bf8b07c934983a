package verdict

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

// nodes builds Nodes from specs "value/pttl" ("-" absent, "!" down, "hash" a foreign
// type, "v/-1" no expiry), on masters m1..mN.
func nodes(specs ...string) []inspect.Node {
	out := make([]inspect.Node, len(specs))
	for i, sp := range specs {
		n := inspect.Node{Master: "m" + string(rune('1'+i)), PTTLMs: -2, Type: inspect.TypeNone}
		switch {
		case sp == "-":
		case sp == "!":
			n.Error = "down"
		case sp == "hash" || sp == "list":
			n.Type, n.PTTLMs = sp, -1
		default:
			v, p, _ := strings.Cut(sp, "/")
			n.Value, n.Type = v, inspect.TypeString
			n.PTTLMs = atoi(p)
		}
		out[i] = n
	}
	return out
}

func atoi(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

func TestJudge(t *testing.T) {
	a := "web-1:7#" + lockHex
	b := "web-2:9#" + lockHex
	p := Params{quorum: 3, driftFactor: 0.01, nodeTimeout: 50 * time.Millisecond}
	tests := []struct {
		name      string
		nodes     []inspect.Node
		state     string
		holders   int
		uncertain bool
		anomalies []string // code@master
		validity  int64    // ms, checked when >= 0
		spread    int64
	}{
		{"held 5/5", nodes(a+"/10000", a+"/10000", a+"/10000", a+"/10000", a+"/10000"), inspect.StateHeld, 5, false, nil, 10000 - 102, 0},
		{"held 3/5 takes the 3rd latest expiry", nodes(a+"/10000", a+"/9000", a+"/8000", "-", "-"), inspect.StateHeld, 3, false, []string{"ttl-spread"}, 8000 - 102, 2000},
		{"held with 2 down is certain", nodes(a+"/10000", a+"/10000", a+"/10000", "!", "!"), inspect.StateHeld, 3, false, nil, -1, 0},
		{"partial 2/5", nodes(a+"/5000", a+"/5000", "-", "-", "-"), inspect.StatePartial, 2, false, nil, 0, 0},
		{"partial 2/5, 1 down: uncertain", nodes(a+"/5000", a+"/5000", "-", "-", "!"), inspect.StatePartial, 2, true, nil, 0, 0},
		{"partial 1/5, 1 down: certain", nodes(a+"/5000", "-", "-", "-", "!"), inspect.StatePartial, 1, false, nil, 0, 0},
		{"split 2+2", nodes(a+"/5000", a+"/5000", b+"/5000", b+"/5000", "-"), inspect.StateSplit, 2, false, nil, 0, 0},
		{"split 2+2+1 down: uncertain", nodes(a+"/5000", a+"/5000", b+"/5000", b+"/5000", "!"), inspect.StateSplit, 2, true, nil, 0, 0},
		{"stray 3+1", nodes(a+"/5000", a+"/5000", a+"/5000", b+"/5000", "-"), inspect.StateHeld, 3, false, []string{"stray-value@m4"}, -1, 0},
		{"no-ttl on one master", nodes(a+"/-1", "-", "-", "-", "-"), inspect.StateNoTTL, 1, false, []string{"no-ttl-node@m1"}, 0, 0},
		{"no-ttl everywhere", nodes(a+"/-1", a+"/-1", a+"/-1", a+"/-1", a+"/-1"), inspect.StateNoTTL, 5, false, []string{"no-ttl-node@m1", "no-ttl-node@m2", "no-ttl-node@m3", "no-ttl-node@m4", "no-ttl-node@m5"}, 0, 0},
		{"held with a no-ttl minority", nodes(a+"/5000", a+"/5000", a+"/5000", a+"/-1", "-"), inspect.StateHeld, 4, false, []string{"no-ttl-node@m4"}, -1, 0},
		{"foreign hash", nodes("hash", "hash", "hash", "-", "-"), inspect.StateForeign, 0, false, []string{"wrongtype-node@m1", "wrongtype-node@m2", "wrongtype-node@m3"}, 0, 0},
		{"held with a wrongtype node", nodes(a+"/5000", a+"/5000", a+"/5000", "list", "-"), inspect.StateHeld, 3, false, []string{"wrongtype-node@m4"}, -1, 0},
		{"free", nodes("-", "-", "-", "-", "-"), inspect.StateFree, 0, false, nil, 0, 0},
		{"free, 3 down: uncertain", nodes("-", "-", "!", "!", "!"), inspect.StateFree, 0, true, nil, 0, 0},
		{"ttl spread beyond expectation", nodes(a+"/10000", a+"/10000", a+"/4000", "-", "-"), inspect.StateHeld, 3, false, []string{"ttl-spread"}, 4000 - 102, 6000},
		{"expired validity clamps at 0", nodes(a+"/1", a+"/1", a+"/1", "-", "-"), inspect.StateHeld, 3, false, nil, 0, 0},
	}
	now := t0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := inspect.Resource{Resource: "r", Key: "r", Nodes: tt.nodes}
			at := make([]time.Time, len(r.Nodes))
			for i := range at {
				at[i] = now
			}
			JudgeWith(&r, at, make([]float64, len(at)), now, p)
			if r.State != tt.state || r.Holders != tt.holders || r.Uncertain != tt.uncertain {
				t.Errorf("state %s holders %d uncertain %v; want %s %d %v", r.State, r.Holders, r.Uncertain, tt.state, tt.holders, tt.uncertain)
			}
			var got []string
			for _, an := range r.Anomalies {
				s := an.Code
				if an.Master != "" {
					s += "@" + an.Master
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != strings.Join(tt.anomalies, " ") {
				t.Errorf("anomalies %v, want %v", got, tt.anomalies)
			}
			if tt.validity >= 0 && r.ValidityMs != tt.validity {
				t.Errorf("validity %dms, want %d", r.ValidityMs, tt.validity)
			}
			if r.TTLSpreadMs != tt.spread {
				t.Errorf("spread %dms, want %d", r.TTLSpreadMs, tt.spread)
			}
		})
	}
}

func TestJudgeOwnerAndToken(t *testing.T) {
	r := inspect.Resource{Nodes: nodes("w:1#"+lockHex+"#42/5000", "w:1#"+lockHex+"#42/5000", "w:1#"+lockHex+"#42/5000")}
	at := []time.Time{t0, t0, t0}
	JudgeWith(&r, at, nil, t0, Params{quorum: 2})
	if r.Owner != "w:1" || r.Token != 42 || r.State != inspect.StateHeld {
		t.Fatalf("owner %q token %d state %s", r.Owner, r.Token, r.State)
	}
	opaque := inspect.Resource{Nodes: nodes("d2FyZG9uZw==/5000", "d2FyZG9uZw==/5000", "-")}
	JudgeWith(&opaque, at, nil, t0, Params{quorum: 2})
	if opaque.Owner != "" || opaque.Value != "d2FyZG9uZw==" || opaque.State != inspect.StateHeld {
		t.Fatalf("opaque: owner %q value %q state %s", opaque.Owner, opaque.Value, opaque.State)
	}
}

// A master whose clock runs fast spends its PTTL sooner: its expiry is projected
// earlier, which moves validity and spread.
func TestJudgeRateCorrection(t *testing.T) {
	a := "w#" + lockHex
	r := inspect.Resource{Nodes: nodes(a+"/10200", a+"/10000", a+"/10000")}
	at := []time.Time{t0, t0, t0}
	rates := []float64{20000, 0, 0} // m1 runs 2% fast: 10200ms of its time is 10000ms here
	JudgeWith(&r, at, rates, t0, Params{quorum: 3, driftFactor: 0.01, nodeTimeout: 50 * time.Millisecond})
	if r.TTLSpreadMs != 0 || r.ValidityMs != 10000-104 {
		t.Fatalf("spread %dms validity %dms; want 0 and %d", r.TTLSpreadMs, r.ValidityMs, 10000-104)
	}
}

func TestDiffRow(t *testing.T) {
	now := t0
	exp := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
	tests := []struct {
		name string
		prev Reading
		cur  Reading
		kind string
	}{
		{"nothing", Reading{}, Reading{}, ""},
		{"acquired", Reading{}, Reading{Value: "a", State: inspect.StateHeld, Expiry: exp(time.Minute)}, "acquired"},
		{"partial appears", Reading{}, Reading{Value: "a", State: inspect.StatePartial}, "partial"},
		{"owner changed", Reading{Value: "a", State: inspect.StateHeld}, Reading{Value: "b", State: inspect.StateHeld}, "owner-changed"},
		{"released early", Reading{Value: "a", State: inspect.StateHeld, Expiry: exp(20 * time.Second)}, Reading{}, "released"},
		{"expired", Reading{Value: "a", State: inspect.StateHeld, Expiry: exp(-time.Millisecond)}, Reading{}, "expired"},
		{"extended", Reading{Value: "a", State: inspect.StateHeld, Expiry: exp(5 * time.Second)}, Reading{Value: "a", State: inspect.StateHeld, Expiry: exp(30 * time.Second)}, "extended"},
		{"steady", Reading{Value: "a", State: inspect.StateHeld, Expiry: exp(5 * time.Second)}, Reading{Value: "a", State: inspect.StateHeld, Expiry: exp(5*time.Second + 3*time.Millisecond)}, ""},
		{"became split", Reading{Value: "a", State: inspect.StateHeld}, Reading{Value: "a", State: inspect.StateSplit}, "split"},
	}
	for _, tt := range tests {
		e, ok := diffRow("r", tt.prev, tt.cur, now, 150*time.Millisecond)
		if (tt.kind == "") == ok || (ok && e.Kind != tt.kind) {
			t.Errorf("%s: event %v %+v, want %q", tt.name, ok, e, tt.kind)
		}
	}
}

// lockHex is a valid 32-hex random part for lock values.
const lockHex = "0123456789abcdef0123456789abcdef"
