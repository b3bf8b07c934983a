package locks

import (
	"strings"
	"testing"
	"time"
)

// The {name}:timeout set of an RPermitExpirableSemaphore, as its tryAcquire script
// leaves it (16-byte permit ids scored by expiry ms, or 922337203685477 without a
// lease), is a Redisson semaphore with its permits; the same set with other members
// or scores, another key, or the plain integer of an RSemaphore is not claimed.
func TestRedissonPermitSemaphore(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	exp := float64(now.Add(30 * time.Second).UnixMilli())
	a, b := "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", "0123456789abcdef"
	set := func(key string, items []string, scores ...float64) Entry {
		return Entry{Key: key, Type: TypeZSet, Items: items, Scores: scores, PTTLMs: -1}
	}
	l := Decode(set("{pool}:timeout", []string{a, b}, exp, exp), nil, now)
	if l.Library != Redisson || l.Kind != "permit-expirable-semaphore" || l.Permits != 2 || !l.Semaphore() || !l.LeasedMembers ||
		l.Release.Unsupported == "" || !strings.Contains(l.Owner, "0102030405060708090a0b0c0d0e0f10") {
		t.Errorf("leased permits: %+v", l)
	}
	if l := Decode(set("x{pool}:timeout", []string{a}, redissonNoLease), nil, now); l.Library != Redisson || l.LeasedMembers || l.Permits != 1 {
		t.Errorf("a permit without lease: library %q leased %v permits %d, want redisson, not leased, 1", l.Library, l.LeasedMembers, l.Permits)
	}
	for name, e := range map[string]Entry{
		"no brace":       set("pool:timeout", []string{a}, exp),
		"other suffix":   set("{pool}:time", []string{a}, exp),
		"17-byte member": set("{pool}:timeout", []string{a + "x"}, exp),
		"score not ms":   set("{pool}:timeout", []string{a}, 1764064800),
		"truncated":      {Key: "{pool}:timeout", Type: TypeZSet, Items: []string{a}, Scores: []float64{exp}, Truncated: true, PTTLMs: -1},
	} {
		if l := Decode(e, nil, now); l.Library == Redisson {
			t.Errorf("%s: claimed as Redisson: %+v", name, l)
		}
	}
	// A plain RSemaphore writes only its count: never named.
	if l := Decode(Entry{Key: "pool", Type: TypeString, Value: "3", PTTLMs: -1}, nil, now); l.Library != Unknown || len(l.Candidates) != 0 {
		t.Errorf("an integer alone: library %q candidates %v, want unknown", l.Library, l.Candidates)
	}
}
