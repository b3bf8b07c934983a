package report

import (
	"math/rand/v2"
	"testing"
)

// TestPlainRun: the 8-bytes-at-once test agrees with plainJSON byte by byte: for every
// byte value in every position of a word among plain neighbours, and for random
// strings, plainRun covers whole plain words and stops at the first word that is not.
func TestPlainRun(t *testing.T) {
	plain := func(s string) bool {
		for _, c := range []byte(s) {
			if c >= 0x80 || !plainJSON[c] {
				return false
			}
		}
		return true
	}
	check := func(s string) {
		n := plainRun(s)
		if n%8 != 0 || n > len(s) || !plain(s[:n]) || (n+8 <= len(s) && plain(s[n:n+8])) {
			t.Fatalf("plainRun(%q) = %d", s, n)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefghijklmnop")
			w[pos] = byte(c)
			check(string(w))
			check(string(w[:8]))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x60))
			if r.IntN(16) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		check(string(b))
	}
}
