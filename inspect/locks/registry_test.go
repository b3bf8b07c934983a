package locks

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// Every library a decoder names (directly or as a candidate) is in the registry, the
// registry is sorted, and the display order puts no lock first and unknown last.
func TestRegistryHoldsEveryDecodedLibrary(t *testing.T) {
	if !slices.IsSortedFunc(Libraries, func(a, b Library) int { return cmp.Compare(a.ID, b.ID) }) {
		t.Fatal("Libraries is not sorted by ID")
	}
	known := func(id string) bool {
		return slices.ContainsFunc(Libraries, func(l Library) bool { return l.ID == id })
	}
	seen := map[string]bool{}
	for i, f := range formats {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		for range 200 {
			key, v := f.gen(r)
			l := Decode(str(key, v), nil, now)
			if l.Library != Unknown && len(l.Candidates) > 0 {
				t.Errorf("%s: named %s with candidates %v", f.name, l.Library, l.Candidates)
			}
			if got := LabelNames(l.Label()); l.Library != Unknown && !slices.Equal(got, []string{l.Library}) || l.Library == Unknown && !slices.Equal(got, l.Candidates) {
				t.Errorf("%s: label %q gives %v", f.name, l.Label(), got)
			}
			for _, id := range append([]string{l.Library}, l.Candidates...) {
				seen[id] = true
				if id != Unknown && !known(id) {
					t.Errorf("%s decodes to %q, which the registry does not list", f.name, id)
				}
			}
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d libraries decoded: %v", len(seen), seen)
	}
	for _, l := range Libraries {
		if l.Name == "" || l.Evidence == "" || (l.Type != TypeString && l.Type != TypeHash && l.Type != TypeZSet) {
			t.Errorf("registry entry %+v is incomplete", l)
		}
	}
	if LibraryRank("redsync|warlock?") != LibraryRank(Redsync) || LibraryRank("") != 0 || LibraryRank(Aioredlock) != 1 || LibraryRank(Unknown) <= LibraryRank(SpringIntegration) || LibraryRank("somelib") <= LibraryRank(Unknown) {
		t.Error("display order: no lock, the registry by id, unknown, then ids it does not hold")
	}
}
