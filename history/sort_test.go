package history

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// sortLifecycles orders by acquisition, then key, then value, as a stable sort on
// that order does, on lifecycles with equal times and keys among them.
func TestSortLifecycles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 11, 28, 3, 12, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 2, 7, 1000} {
		ls := make([]Lifecycle, n)
		for i := range ls {
			ls[i] = Lifecycle{
				AcquiredAt: base.Add(time.Duration(rng.IntN(5))*time.Second + time.Duration(rng.IntN(3))*time.Microsecond),
				Key:        fmt.Sprintf("k%d", rng.IntN(3)), Value: fmt.Sprintf("v%d", i),
			}
		}
		want := slices.Clone(ls)
		slices.SortStableFunc(want, func(a, b Lifecycle) int {
			if c := a.AcquiredAt.Compare(b.AcquiredAt); c != 0 {
				return c
			}
			if c := strings.Compare(a.Key, b.Key); c != 0 {
				return c
			}
			return strings.Compare(a.Value, b.Value)
		})
		sortLifecycles(ls)
		for i := range ls {
			if ls[i].Value != want[i].Value {
				t.Fatalf("%d lifecycles: position %d holds %s (%v %s), want %s (%v %s)", n, i,
					ls[i].Value, ls[i].AcquiredAt, ls[i].Key, want[i].Value, want[i].AcquiredAt, want[i].Key)
			}
		}
	}
}
