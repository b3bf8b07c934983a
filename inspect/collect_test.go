package inspect

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/config"
	"github.com/redlockctl/redlockctl/inspect/errkind"
)

// sortByName orders exactly as strings.Compare on the names, whatever they share:
// a common prefix longer or shorter than 8 bytes, names that end inside the compared
// head, zero bytes (which the head pads with), equal names (then by entry).
func TestSortByNameMatchesStringOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	for _, prefix := range []string{"", "a", "lock:job:", "a-very-long-common-prefix:"} {
		for round := range 50 {
			n := 1 + rng.IntN(300)
			names := make([]string, n)
			for i := range names {
				b := []byte(prefix)
				for range rng.IntN(12) {
					b = append(b, alphabet[rng.IntN(len(alphabet))])
				}
				names[i] = string(b)
			}
			entries := make([]int32, n)
			for i := range entries {
				entries[i] = int32(n - 1 - i) // not already in order
			}
			sortByName(entries, func(e int32) string { return names[e] })
			for i := 1; i < n; i++ {
				a, b := names[entries[i-1]], names[entries[i]]
				if c := strings.Compare(a, b); c > 0 || (c == 0 && entries[i-1] > entries[i]) {
					t.Fatalf("prefix %q round %d: %q (entry %d) before %q (entry %d)", prefix, round, a, entries[i-1], b, entries[i])
				}
			}
		}
	}
}

// Strings handed out by the arena keep their bytes while later ones are added, the
// source buffer is reused, and chunks fill up.
func TestArenaStringsStay(t *testing.T) {
	var a arena
	var got []string
	var want []string
	buf := make([]byte, 0, 64)
	for i := range 5000 {
		buf = append(buf[:0], "key:"...)
		buf = append(buf, strings.Repeat(string(rune('a'+i%26)), i%40)...)
		got = append(got, a.str(buf))
		want = append(want, string(buf))
	}
	big := []byte(strings.Repeat("z", arenaChunk))
	got, want = append(got, a.str(big)), append(want, string(big))
	big[0] = 'y' // the caller's buffer is not the string's
	if !slices.Equal(got, want) {
		t.Fatal("arena strings changed after later additions")
	}
	if a.str(nil) != "" {
		t.Error("empty bytes must give the empty string")
	}
}

// The merge keeps the last read of a key per master (SCAN may return a key twice),
// shares equal values, keeps different ones apart, and marks a master that failed.
func TestCollectorMerge(t *testing.T) {
	cfg := config.Default()
	for _, n := range []string{"m1", "m2", "m3"} {
		cfg.Masters = append(cfg.Masters, config.MasterConfig{Name: n, Addr: n + ":6379"})
	}
	now := time.Now()
	col := newCollector(cfg)
	add := func(mi int, kvs ...any) {
		kb := &keyBatch{}
		for i := 0; i < len(kvs); i += 3 {
			kb.keys = append(kb.keys, []byte(kvs[i].(string)))
			kb.vals = append(kb.vals, []byte(kvs[i+1].(string)))
			kb.pttls = append(kb.pttls, int64(kvs[i+2].(int)))
		}
		col.add(mi, now, kb)
	}
	v1, v2 := "w1#"+hex32, "w2#"+hex32
	add(0, "b", v1, 9000, "a", v1, 9000)
	add(1, "a", v2, 8000, "b", v1, 9000, "gone", v1, -2)
	add(1, "a", v1, 8500) // read again: the last read counts
	add(2, "a", v1, 9000, "c", v2, 100)
	if len(col.others) != 1 { // v2 for a on m2; every equal value shares its row's copy
		t.Errorf("%d values copied apart from their row's first, want 1", len(col.others))
	}
	col.close()
	rows := col.finish(now, []string{"", "", "connect: refused"}, []errkind.Kind{0, 0, errkind.Refused}, make([]float64, 3), paramsOf(cfg))
	var names []string
	for _, r := range rows {
		names = append(names, r.Resource)
	}
	if !slices.Equal(names, []string{"a", "b"}) { // c: only on m3, which failed
		t.Fatalf("rows %v, want [a b]", names)
	}
	a := rows[0]
	if a.Nodes[1].Value != v1 || a.Nodes[1].PTTLMs != 8500 || a.Holders != 2 || a.State != StateHeld {
		t.Errorf("a: m2 %+v, holders %d, state %s", a.Nodes[1], a.Holders, a.State)
	}
	if n := a.Nodes[2]; n.Error != "connect: refused" || n.ErrorKind != errkind.Refused || n.PTTLMs != -2 || n.Value != "" || n.Master != "m3" {
		t.Errorf("a on the failed m3: %+v", n)
	}
}
