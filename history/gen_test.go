package history

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"
)

// workload generates lifecycles as a busy fleet ends them: rate a second, over
// 10,000 resources and 500 owners; holds of 5 ms to 0.5 s mostly, some up to 30 s
// and 10 min; 1% expired, the rest released.
type workload struct {
	rng   *rand.Rand
	at    time.Time
	rate  int
	owner []string
}

func newWorkload(seed uint64, start time.Time, rate int) *workload {
	w := &workload{rng: rand.New(rand.NewPCG(seed, 1)), at: start, rate: rate}
	for i := range 500 {
		w.owner = append(w.owner, fmt.Sprintf("worker-%d.prod:%d", i%50, 1000+i))
	}
	return w
}

// second returns the lifecycles that end in the next second.
func (w *workload) second() []Lifecycle {
	out := make([]Lifecycle, 0, w.rate)
	step := time.Second / time.Duration(w.rate)
	for i := range w.rate {
		end := w.at.Add(time.Duration(i) * step)
		var hold time.Duration
		switch p := w.rng.Float64(); {
		case p < 0.80:
			hold = 5*time.Millisecond + time.Duration(w.rng.Int64N(int64(495*time.Millisecond)))
		case p < 0.95:
			hold = time.Duration(500+w.rng.Int64N(29500)) * time.Millisecond
		default:
			hold = time.Duration(30+w.rng.Int64N(570)) * time.Second
		}
		res := fmt.Sprintf("billing:job:%d", w.rng.IntN(10000))
		owner := w.owner[w.rng.IntN(len(w.owner))]
		var r [16]byte
		for j := range r {
			r[j] = byte(w.rng.Uint32())
		}
		l := Lifecycle{Resource: res, Key: "lock:" + res, Value: owner + "#" + hex.EncodeToString(r[:]), Owner: owner,
			Library: "redlockctl", Scope: "redlock", Masters: 5, Quorum: 3, AcquiredAt: end.Add(-hold).Truncate(time.Microsecond), EndedAt: end,
			TTLMs: 30000, Extensions: int(hold / (10 * time.Second)), End: Released}
		if w.rng.IntN(100) == 0 {
			l.End = Expired
		} else {
			m := float64(30000-hold.Milliseconds()%30000) - 0.25
			l.MarginMs = &m
		}
		out = append(out, l)
	}
	w.at = w.at.Add(time.Second)
	return out
}
