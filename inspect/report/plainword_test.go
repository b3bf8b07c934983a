package report

import (
	"math/rand/v2"
	"testing"
)

// TestPlainWord: the 8-byte test agrees with plainJSON byte by byte, for every byte
// value in every position among plain neighbours, and for random words.
func TestPlainWord(t *testing.T) {
	allPlain := func(w []byte) bool {
		for _, c := range w {
			if c >= 0x80 || !plainJSON[c] {
				return false
			}
		}
		return true
	}
	check := func(w []byte) {
		if got, want := plainWord(string(w)), allPlain(w); got != want {
			t.Fatalf("plainWord(%q) = %v, want %v", w, got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			check(w)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	w := make([]byte, 8)
	for range 200_000 {
		for i := range w {
			w[i] = byte(r.IntN(256))
			if r.IntN(4) > 0 {
				w[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		check(w)
	}
}
