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
	// Its permit count is read at the name (the bare name first, then the braced one)
	// and becomes the row's companion; a value that is no integer is not its count.
	if cs := Related(set("{pool}:timeout", []string{a}, exp)); len(cs) != 2 || cs[0].Key != "pool" || cs[1].Key != "{pool}" || cs[0].Type != TypeString {
		t.Errorf("Related of {pool}:timeout: %+v, want pool then {pool}, strings", cs)
	}
	if cs := Related(set("x{pool}:timeout", []string{a}, exp)); len(cs) != 1 || cs[0].Key != "x{pool}" {
		t.Errorf("Related of x{pool}:timeout: %+v, want x{pool}", cs)
	}
	if cs := Related(set("{pool}:timeout", []string{a + "x"}, exp)); len(cs) != 0 {
		t.Errorf("Related of a set of other members: %+v, want none", cs)
	}
	count := func(key, v string) Entry { return Entry{Key: key, Type: TypeString, Value: v, PTTLMs: -1} }
	for name, c := range map[string]struct {
		related map[string]Entry
		key     string
		avail   int
	}{
		"at the name":           {map[string]Entry{"pool": count("pool", "2")}, "pool", 2},
		"at the braced name":    {map[string]Entry{"{pool}": count("{pool}", "0")}, "{pool}", 0},
		"the name not a number": {map[string]Entry{"pool": count("pool", "two"), "{pool}": count("{pool}", "-1")}, "{pool}", -1},
	} {
		l := Decode(set("{pool}:timeout", []string{a}, exp), c.related, now)
		if l.Available == nil || *l.Available != c.avail || len(l.Companions) != 1 || l.Companions[0].Key != c.key || l.Companions[0].Role != RolePermitCount {
			t.Errorf("%s: available %v companions %+v, want %d at %s", name, l.Available, l.Companions, c.avail, c.key)
		}
	}
	if l := Decode(set("{pool}:timeout", []string{a}, exp), map[string]Entry{"pool": count("pool", "two")}, now); l.Available != nil || len(l.Companions) != 0 {
		t.Errorf("no integer beside it: available %v companions %+v, want none", l.Available, l.Companions)
	}
	// A plain RSemaphore writes only its count: never named.
	if l := Decode(Entry{Key: "pool", Type: TypeString, Value: "3", PTTLMs: -1}, nil, now); l.Library != Unknown || len(l.Candidates) != 0 {
		t.Errorf("an integer alone: library %q candidates %v, want unknown", l.Library, l.Candidates)
	}
}
