package live

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestBaseIndex: keys added and removed at random (a quarter of the time), with the
// index grown many times over and slots moved back on removal, are found exactly
// while they are held and not after; Len counts them.
func TestBaseIndex(t *testing.T) {
	b := newBase(false)
	rng := rand.New(rand.NewPCG(1, 2))
	held := map[string]bool{}
	for n := range 200_000 {
		k := "lock:" + strconv.Itoa(rng.IntN(50_000))
		if r, i := b.find(k); r != nil {
			if !held[k] || b.key(r) != k {
				t.Fatalf("step %d: found %q (record %d holds %q), held %v", n, k, i, b.key(r), held[k])
			}
			if rng.IntN(4) == 0 {
				b.remove(k, i)
				delete(held, k)
			}
			continue
		}
		if held[k] {
			t.Fatalf("step %d: %q held but not found", n, k)
		}
		r, ok := b.add(k, "")
		if !ok {
			t.Fatalf("step %d: add %q refused", n, k)
		}
		r.present = 1
		held[k] = true
	}
	if b.Len() != len(held) || len(held) < 10_000 {
		t.Fatalf("Len %d, held %d", b.Len(), len(held))
	}
	for k := range held {
		if r, _ := b.find(k); r == nil || b.key(r) != k {
			t.Fatalf("%q held but not found at the end", k)
		}
	}
	if load := float64(b.Len()) / float64(len(b.idx.slots)); load > 0.75 {
		t.Errorf("index %.2f full, want at most three quarters", load)
	}
}
