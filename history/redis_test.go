package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// hold is one lifecycle as the workload's own log has it: the lock was held at
// least from acquired (Acquire returned) to released (Release was called); expiring
// ones were never released.
type hold struct {
	resource, value    string
	acquired, released time.Time
	expires            bool
}

// recording is a live feed of servers recorded to a store in dir.
type recording struct {
	feed   *live.Feed
	store  *Store
	stop   func()
	mu     sync.Mutex
	events []live.Event // every event the feed gave
}

func startRecording(t *testing.T, servers []*redistest.Server, dir string) *recording {
	t.Helper()
	cfg := config.Default()
	cfg.AuditLog = ""
	cfg.Inspect.Patterns = []string{"hist:*"}
	cfg.Lock.KeyPrefix = "hist:"
	if err := cfg.SetMasters(redistest.Addrs(servers)); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(s, RecorderOptions{Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	feed := live.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	r0 := &recording{}
	go func() {
		defer wg.Done()
		_ = feed.Run(ctx, func(e live.Event) {
			r0.mu.Lock()
			r0.events = append(r0.events, e)
			r0.mu.Unlock()
			rec.Observe(e)
		})
	}()
	go func() { defer wg.Done(); _ = rec.Run(ctx) }()
	r := r0
	r.feed, r.store = feed, s
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); wg.Wait(); s.Close() }) }
	t.Cleanup(r.stop)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		up := 0
		for _, st := range feed.Status() {
			if st.Up {
				up++
			}
		}
		if up == len(servers) {
			return r
		}
		if time.Now().After(end) {
			t.Fatalf("the feed is not up within 10 s: %+v", feed.Status())
		}
	}
}

// runWorkload takes and releases locks from four workers for d, each on two
// resources of its own (resW-0, resW-1: the truth of a contended round is the
// feed's to prove, not the history's), and lets a few expire (held past their TTL,
// never released); it returns its log.
func runWorkload(t *testing.T, servers []*redistest.Server, d time.Duration) []hold {
	t.Helper()
	c, err := redlock.New(redistest.Pools(servers), redlock.WithKeyPrefix("hist:"), redlock.WithOwner("worker"), redlock.WithRetries(0), redlock.WithRestartGuard(0))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []hold
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 4))
			ctx := context.Background()
			for i := 0; time.Now().Before(end); i++ {
				res := fmt.Sprintf("res%d-%d", w, rng.IntN(2))
				expire := w == 0 && i%8 == 7
				ttl := 2 * time.Second
				if expire {
					ttl = 300 * time.Millisecond
				}
				l, err := c.Acquire(ctx, res, ttl)
				if err != nil {
					time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
					continue
				}
				h := hold{resource: res, value: l.Value(), acquired: time.Now(), expires: expire}
				if expire {
					time.Sleep(ttl + 200*time.Millisecond)
				} else {
					time.Sleep(time.Duration(150+rng.IntN(250)) * time.Millisecond) // past the feed's read (live.ReadDelay), which learns the value
					h.released = time.Now()
					if err := c.Release(ctx, l); err != nil {
						continue // not known released: left out of the truth
					}
				}
				mu.Lock()
				log = append(log, h)
				mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return log
}

// waitRecorded waits until every value of log is in the store, ended.
func waitRecorded(t *testing.T, rec *recording, log []hold) map[string]Lifecycle {
	s := rec.store
	t.Helper()
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := s.Lifecycles(Filter{}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Lifecycle{}
		for _, l := range r.Lifecycles {
			if l.End != Held {
				got[l.Value] = l
			}
		}
		missing := 0
		for _, h := range log {
			if _, ok := got[h.value]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		if time.Now().After(end) {
			for _, h := range log {
				if _, ok := got[h.value]; !ok {
					t.Logf("missing %+v", h)
					rec.mu.Lock()
					for _, e := range rec.events {
						if e.Resource == h.resource && e.At.After(h.acquired.Add(-time.Second)) && e.At.Before(h.released.Add(time.Second)) {
							b, _ := e.MarshalJSON()
							t.Logf("  event %s", b)
						}
					}
					rec.mu.Unlock()
				}
			}
			for _, l := range r.Lifecycles {
				t.Logf("recorded %s %s %s %s..%s", l.Resource, l.Value, l.End, l.AcquiredAt.Format("15:04:05.000"), l.EndedAt.Format("15:04:05.000"))
			}
			t.Fatalf("%d of %d logged lifecycles not recorded within 15 s", missing, len(log))
		}
	}
}

func TestRecordsTheWorkloadsTruth(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	rec := startRecording(t, servers, t.TempDir())
	before := time.Now()
	time.Sleep(100 * time.Millisecond)
	log := runWorkload(t, servers, 4*time.Second)
	got := waitRecorded(t, rec, log)

	expired := 0
	for _, h := range log {
		l := got[h.value]
		if h.expires {
			expired++
			if l.End != Expired || l.Resource != h.resource || l.Owner != "worker" {
				t.Errorf("overrun %s of %s recorded as %+v, want expired", h.value, h.resource, l)
			}
			continue
		}
		if l.End != Released || l.Resource != h.resource {
			t.Errorf("%s of %s recorded as %+v, want released", h.value, h.resource, l)
			continue
		}
		mid := h.acquired.Add(h.released.Sub(h.acquired) / 2)
		a, err := rec.store.At(Select{Resources: []string{h.resource}}, mid)
		if err != nil {
			t.Fatal(err)
		}
		if a.Unknown != "" || len(a.Holders) != 1 || a.Holders[0].Value != h.value {
			t.Errorf("%s at the midpoint of a hold of %s: %+v, want %s alone", h.resource, h.value, a, h.value)
		}
	}
	if expired == 0 || len(log) < 30 {
		t.Fatalf("the workload logged %d holds, %d overruns: too few to judge", len(log), expired)
	}
	a, err := rec.store.At(Select{}, before)
	if err != nil {
		t.Fatal(err)
	}
	if a.Unknown != "" || len(a.Holders) != 0 {
		t.Errorf("before any hold: %+v, want no holder", a)
	}
	t.Logf("%d holds logged, %d overruns, all recorded", len(log), expired)
}
