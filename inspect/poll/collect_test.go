package poll

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
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
// source buffer is reused, and chunks fill up; their references (long ones too) give
// the same strings at the end.
func TestArenaStringsStay(t *testing.T) {
	var a arena
	var got, want []string
	var refs []strRef
	buf := make([]byte, 0, 64)
	for i := range 5000 {
		buf = append(buf[:0], "key:"...)
		buf = append(buf, strings.Repeat(string(rune('a'+i%26)), i%40)...)
		r := a.ref(buf)
		refs, got, want = append(refs, r), append(got, a.get(r)), append(want, string(buf))
	}
	big := []byte(strings.Repeat("z", wire.ArenaChunk))
	r := a.ref(big)
	refs, got, want = append(refs, r), append(got, a.get(r)), append(want, string(big))
	big[0] = 'y' // the caller's buffer is not the string's
	if !slices.Equal(got, want) {
		t.Fatal("arena strings changed after later additions")
	}
	for i, r := range refs {
		if a.get(r) != want[i] {
			t.Fatalf("reference %d (%#x) gives %q, want %q", i, r, a.get(r), want[i])
		}
	}
	if len(a.chunks) < 2 {
		t.Fatalf("%d chunks: the test never filled one", len(a.chunks))
	}
	if a.ref(nil) != 0 || a.get(0) != "" {
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
	rows := col.plan(now, []string{"", "", "connect: refused"}, []errkind.Kind{0, 0, errkind.Refused}, make([]float64, 3), verdict.ParamsOf(cfg)).Rows()
	var names []string
	for _, r := range rows {
		names = append(names, r.Resource)
	}
	if !slices.Equal(names, []string{"a", "b"}) { // c: only on m3, which failed
		t.Fatalf("rows %v, want [a b]", names)
	}
	a := rows[0]
	if a.Nodes[1].Value != v1 || a.Nodes[1].PTTLMs != 8500 || a.Holders != 2 || a.State != inspect.StateHeld {
		t.Errorf("a: m2 %+v, holders %d, state %s", a.Nodes[1], a.Holders, a.State)
	}
	if n := a.Nodes[2]; n.Error != "connect: refused" || n.ErrorKind != errkind.Refused || n.PTTLMs != -2 || n.Value != "" || n.Master != "m3" {
		t.Errorf("a on the failed m3: %+v", n)
	}
}

// A master that answers after the poll gave up on it (a straggler) finds the
// collector closed, even once its rows were planned: its batch is dropped, and
// nothing it held shows up.
func TestCollectorDropsStragglers(t *testing.T) {
	cfg := config.Default()
	cfg.Masters = []config.MasterConfig{{Name: "m1", Addr: "m1:6379"}, {Name: "m2", Addr: "m2:6379"}}
	now := time.Now()
	col := newCollector(cfg)
	batch := func(key string) *keyBatch {
		return &keyBatch{keys: [][]byte{[]byte(key)}, vals: [][]byte{[]byte("w1#" + hex32)}, pttls: []int64{9000}}
	}
	if !col.add(0, now, batch("a")) {
		t.Fatal("an open collector refused a batch")
	}
	col.close()
	if col.add(1, now, batch("late")) {
		t.Error("a closed collector took a batch")
	}
	pl := col.plan(now, []string{"", ""}, make([]errkind.Kind, 2), make([]float64, 2), verdict.ParamsOf(cfg))
	if col.add(1, now, batch("later")) {
		t.Error("a planned collector took a batch")
	}
	if rows := pl.Rows(); len(rows) != 1 || rows[0].Resource != "a" {
		t.Errorf("rows %+v, want only a", rows)
	}
}

// keyIndex finds every key it was given, and only those, across growth from its
// smallest size, with keys that share long prefixes, differ in one byte, or are empty
// or contain zero bytes; and hashes that share their upper half (the slot's tag) are
// still told apart by the key itself.
func TestKeyIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := newKeyIndex()
	var keys []string
	want := map[string]int32{}
	add := func(k string) {
		h := x.hash([]byte(k))
		e, slot := x.find(h, []byte(k), keyList(keys))
		if w, ok := want[k]; ok {
			if e != w {
				t.Fatalf("find(%q) = %d, want %d", k, e, w)
			}
			return
		}
		if e != -1 {
			t.Fatalf("find(%q) = %d for a new key", k, e)
		}
		keys = append(keys, k)
		want[k] = int32(len(keys) - 1)
		x.insert(h, slot, int32(len(keys)-1), keyList(keys))
	}
	add("")
	add("\x00")
	for i := range 20000 {
		add("lock:resource:" + strconv.Itoa(rng.IntN(15000)))
		if i%7 == 0 {
			add(string([]byte{byte(i), 0, byte(i >> 8)}))
		}
	}
	if len(x.slots) < 2*len(keys) {
		t.Fatalf("%d slots for %d keys: more than half full", len(x.slots), len(keys))
	}
	for k, w := range want {
		if e, _ := x.find(x.hash([]byte(k)), []byte(k), keyList(keys)); e != w {
			t.Fatalf("find(%q) = %d, want %d", k, e, w)
		}
	}
	for _, k := range []string{"lock:resource:15000", "lock:resource:-1", "x"} {
		if e, _ := x.find(x.hash([]byte(k)), []byte(k), keyList(keys)); e != -1 {
			t.Fatalf("find(%q) = %d for a key never added", k, e)
		}
	}
	// Same tag, different keys: a hash that equals an indexed key's in its upper half
	// (and its slot) must not find that key.
	k := keys[len(keys)/2]
	h := x.hash([]byte(k))
	if e, _ := x.find(h, []byte(k+"!"), keyList(keys)); e != -1 {
		t.Fatalf("a different key with the same hash found entry %d", e)
	}
}

// A plan's rows handed out a chunk at a time (each, as a one-shot dump builds them)
// are the rows it builds all at once, in the same order, for any chunk size: split
// and partial rows, a failed master, foreign values, and node-redlock values that
// hold several keys (whose note needs the whole set), some of them on rows whose
// first master read a different value.
func TestPlanEachEqualsRows(t *testing.T) {
	cfg := config.Default()
	for _, n := range []string{"m1", "m2", "m3"} {
		cfg.Masters = append(cfg.Masters, config.MasterConfig{Name: n, Addr: n + ":6379"})
	}
	now := time.Now()
	rng := rand.New(rand.NewPCG(9, 10))
	shared := []string{hex32, strings.Repeat("ab", 16), strings.Repeat("0f", 16)}
	col := newCollector(cfg)
	for mi := range 3 {
		kb := &keyBatch{}
		for k := range 3000 {
			v := "w" + strconv.Itoa(k) + "#" + hex32
			switch k % 10 {
			case 0, 1:
				v = shared[k%3]
			case 2:
				v = shared[(k+mi)%3] // the masters disagree
			case 3:
				if mi == 1 {
					continue // absent on m2
				}
			case 4:
				v = "foreign value " + strconv.Itoa(rng.IntN(5))
			}
			kb.keys = append(kb.keys, []byte("lock:"+strconv.Itoa(k)))
			kb.vals = append(kb.vals, []byte(v))
			kb.pttls = append(kb.pttls, int64(1000+rng.IntN(9000)))
		}
		col.add(mi, now, kb)
	}
	col.close()
	pl := col.plan(now, []string{"", "", "read keys: timeout"}, []errkind.Kind{0, 0, errkind.Timeout}, make([]float64, 3), verdict.ParamsOf(cfg))
	var want, one []byte
	all := pl.Rows()
	for i, r := range all {
		want = appendJSON(want, r)
		// One row at a time (the console's detail), and one node without the row (its
		// sort by a master's PTTL), are the same.
		one = appendJSON(one, pl.row(i))
		for mi := range r.Nodes {
			if n := pl.node(i, mi); n != r.Nodes[mi] {
				t.Fatalf("row %d master %d: node %+v, built with the row %+v", i, mi, n, r.Nodes[mi])
			}
		}
	}
	if !bytes.Contains(want, []byte("the same value holds")) {
		t.Fatal("no row was noted as sharing its value: the test does not test that")
	}
	if !bytes.Equal(one, want) {
		t.Fatal("rows built one at a time differ from the rows built at once")
	}
	defer func(n int) { streamChunk = n }(streamChunk)
	for _, chunk := range []int{1, 7, 1000, 4096} {
		streamChunk = chunk
		var got []byte
		next := 0
		err := pl.each(func(lo int, rows []inspect.Resource, out []byte) ([]byte, error) {
			if lo%chunk != 0 {
				t.Errorf("chunks of %d: a chunk starts at row %d", chunk, lo)
			}
			for _, r := range rows {
				out = appendJSON(out, r)
			}
			return out, nil
		}, func(out []byte) error {
			got = append(got, out...)
			next++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next != (len(pl.keep)+chunk-1)/chunk {
			t.Fatalf("chunks of %d: %d chunks emitted", chunk, next)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("chunks of %d: the rows differ from the rows built at once (%d bytes vs %d)", chunk, len(got), len(want))
		}
	}
	// An error from work or emit stops each, which returns it.
	streamChunk = 7
	stop := errors.New("stop")
	for _, failWork := range []bool{true, false} {
		calls := 0
		err := pl.each(func(_ int, rows []inspect.Resource, out []byte) ([]byte, error) {
			if failWork {
				return out, stop
			}
			return append(out, 'x'), nil
		}, func([]byte) error {
			calls++
			return stop
		})
		if err != stop || calls > 1 {
			t.Fatalf("failing work %v: each returned %v after %d emits", failWork, err, calls)
		}
	}
}

// appendJSON appends r's JSON and a newline (an error's text instead, which no
// comparison then matches: it runs on each's goroutines, where t.Fatal must not).
func appendJSON(b []byte, r inspect.Resource) []byte {
	j, err := json.Marshal(r)
	if err != nil {
		j = []byte(err.Error())
	}
	return append(append(b, j...), '\n')
}

// A cell reads back as it was set, packed in 8 bytes or (a PTTL beyond ±17 years, a
// batch beyond 22 bits, a value other than none or the first) whole in the wide map;
// setting a packed cell over a wide one drops the wide one.
func TestCellPacking(t *testing.T) {
	c := &collector{cells: make([]packed, 8)}
	cases := []cell{
		emptyCell,
		{pttl: -1, batch: 0, val: 1},
		{pttl: 30000, batch: 1<<packedBatchBits - 2, val: 1},
		{pttl: 1<<39 - 1, batch: 7, val: 0},
		{pttl: 1 << 39, batch: 7, val: 1},                   // too long a PTTL
		{pttl: 5000, batch: 1<<packedBatchBits - 1, val: 1}, // too many batches
		{pttl: 5000, batch: 3, val: 2},                      // another value
		{pttl: 5000, batch: 3, val: 9},
	}
	for i, cl := range cases {
		c.setCell(i, cl)
	}
	for i, cl := range cases {
		if got := c.cell(i); got != cl {
			t.Errorf("cell %d: %+v, want %+v", i, got, cl)
		}
	}
	if len(c.wide) != 4 {
		t.Errorf("%d wide cells, want 4", len(c.wide))
	}
	c.setCell(4, emptyCell)
	if got := c.cell(4); got != emptyCell || len(c.wide) != 3 {
		t.Errorf("a wide cell set packed: %+v, %d wide", got, len(c.wide))
	}
}

// sortHashes sorts as slices.Sort does, duplicates and uneven spreads included.
func TestSortHashes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 100, 5000, 100_000} {
		for _, spread := range []uint64{0, 1 << 60, ^uint64(0)} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = r.Uint64()
				if spread != ^uint64(0) {
					a[i] = a[i]%1000 + spread // few values, in one bucket or two
				}
			}
			want := slices.Clone(a)
			slices.Sort(want)
			sortHashes(a)
			if !slices.Equal(a, want) {
				t.Fatalf("%d values (spread %x): not sorted as slices.Sort sorts them", n, spread)
			}
		}
	}
}
