package locks

import "testing"

// BenchmarkIdentify measures what a row whose value is not this project's costs to
// identify: a redsync-shaped value (base64 of 16 bytes) at lock:<name>, on 5 masters,
// which every string decoder before redsync's is asked about.
func BenchmarkIdentify(b *testing.B) {
	const key, v = "lock:job:4711", "q83vEjRWeJCrze8SNFZ4kA=="
	s := See(str(key, v), nil, now)
	seen := []Seen{s, s, s, s, s}
	b.ReportAllocs()
	for b.Loop() {
		if id := Identify(key, v, seen, now); id.Label != Redsync+"?" {
			b.Fatalf("label %q", id.Label)
		}
	}
}
