package history

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
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
	store  Backend
	stop   func()
	mu     sync.Mutex
	events []live.Event // every event the feed gave
}

func startRecording(t *testing.T, servers []*redistest.Server, dir string) *recording {
	t.Helper()
	return startRecordingAudited(t, servers, dir, "")
}

// startRecordingAudited is startRecording with an audit log (or "").
func startRecordingAudited(t *testing.T, servers []*redistest.Server, dir, audit string) *recording {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return startRecordingOn(t, servers, s, audit)
}

// startRecordingOn records a live feed of servers to s (closed at the end).
func startRecordingOn(t *testing.T, servers []*redistest.Server, s Backend, audit string) *recording {
	t.Helper()
	cfg := config.Default()
	cfg.AuditLog = audit
	cfg.Inspect.Patterns = []string{"hist:*"}
	cfg.Lock.KeyPrefix = "hist:"
	if err := cfg.SetMasters(redistest.Addrs(servers)); err != nil {
		t.Fatal(err)
	}
	feed := live.New(cfg)
	rec, err := NewRecorder(s, RecorderOptions{Log: t.Logf, AuditLog: audit, FeedUp: feedIsUp(feed)})
	if err != nil {
		t.Fatal(err)
	}
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
// waitCovered waits until the store's recording covers the last hold of log (a
// session covers up to coverLag behind its last write).
func waitCovered(t *testing.T, s Backend, log []hold) {
	t.Helper()
	var last time.Time
	for _, h := range log {
		last = maxTime(last, h.released, h.acquired)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		a, err := s.At(Select{Resources: []string{"-"}}, last)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(a.Unknown, "nothing recorded after") {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the recording does not cover %s within 10 s: %s", last, a.Unknown)
		}
	}
}

func maxTime(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

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
	time.Sleep(100 * time.Millisecond) // the recorder sees the feed up
	before := time.Now()
	time.Sleep(100 * time.Millisecond)
	log := runWorkload(t, servers, 4*time.Second)
	got := waitRecorded(t, rec, log)
	waitCovered(t, rec.store, log)

	expired := 0
	late := 0
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
		if feedLate(a) {
			late++
			continue
		}
		if a.Unknown != "" || len(a.Holders) != 1 || a.Holders[0].Value != h.value {
			t.Errorf("%s at the midpoint of a hold of %s: %+v, want %s alone", h.resource, h.value, a, h.value)
		}
	}
	checkLate(t, late, len(log))
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

func TestAFeedGapIsUnknownForItsSpan(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	rec := startRecording(t, servers, t.TempDir())
	log := runWorkload(t, servers, time.Second)
	servers[1].Restart(false) // its feed is cut, then read whole again
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st := rec.feed.Status()[1]; st.Up && st.Gaps > 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no gap and resync on the restarted master within 10 s: %+v", rec.feed.Status())
		}
	}
	log = append(log, runWorkload(t, servers, time.Second)...)
	waitRecorded(t, rec, log)
	waitCovered(t, rec.store, log)
	marks, err := rec.store.Marks(time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var gap *Mark
	for i := range marks {
		if marks[i].Kind == MarkGap && marks[i].Master != "*" { // (not a stall of the feed's own)
			gap = &marks[i]
		}
	}
	if gap == nil || gap.To.IsZero() || !gap.To.After(gap.At) {
		t.Fatalf("marks %+v: want one closed gap", marks)
	}
	for _, at := range []time.Time{gap.At, gap.At.Add(gap.To.Sub(gap.At) / 2), gap.To} {
		a, err := rec.store.At(Select{}, at)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(a.Unknown, "feed gap from "+stamp(gap.At)+" to "+stamp(gap.To)) || len(a.Holders) != 0 {
			t.Errorf("at %s, inside the gap: %+v, want unknown", stamp(at), a)
		}
	}
	// Outside it, the answers stand.
	late := 0
	for _, h := range log {
		if h.expires {
			continue
		}
		mid := h.acquired.Add(h.released.Sub(h.acquired) / 2)
		if !mid.Before(gap.At) && !mid.After(gap.To) {
			continue
		}
		a, err := rec.store.At(Select{Resources: []string{h.resource}}, mid)
		if err != nil {
			t.Fatal(err)
		}
		if feedLate(a) {
			late++
			continue
		}
		if a.Unknown != "" || len(a.Holders) != 1 || a.Holders[0].Value != h.value {
			t.Errorf("%s at the midpoint of a hold of %s, outside the gap: %+v", h.resource, h.value, a)
		}
	}
	checkLate(t, late, len(log))
}

// feedLate reports whether a is unknown because the feed said it handled that span
// late (it waited for a core: a loaded machine), as it should say.
func feedLate(a Answer) bool { return strings.Contains(a.Unknown, "for a core") }

// checkLate fails when more than a quarter of n sampled instants fell in the feed's
// own stalls: a few are a loaded machine's, more would hide what the test checks.
func checkLate(t *testing.T, late, n int) {
	t.Helper()
	if late > 0 {
		t.Logf("%d of %d instants fell in a span the feed reported it handled late", late, n)
	}
	if late*4 > n {
		t.Errorf("%d of %d instants fell in the feed's own stalls: too many to judge", late, n)
	}
}

// feedChild is the environment variable that makes the test binary record the
// live feed of the masters in HISTORY_FEED_ADDRS to the store in its value's
// directory, as serve does, until it is killed; it prints "up" once the feed is,
// then the value of each lifecycle's end as the recorder is given it.
const feedChild = "HISTORY_FEED_CHILD"

func feedRecorder(dir string, addrs []string) int {
	cfg := config.Default()
	cfg.AuditLog = ""
	cfg.Inspect.Patterns = []string{"hist:*"}
	cfg.Lock.KeyPrefix = "hist:"
	if err := cfg.SetMasters(addrs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	feed := live.New(cfg)
	rec, err := NewRecorder(s, RecorderOptions{FeedUp: feedIsUp(feed)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ends := make(chan string, 1<<16)
	go rec.Run(context.Background())
	go feed.Run(context.Background(), func(e live.Event) {
		rec.Observe(e)
		if e.Ends() {
			ends <- e.Value
		}
	})
	for {
		up := 0
		for _, st := range feed.Status() {
			if st.Up {
				up++
			}
		}
		if up == len(addrs) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("up")
	for v := range ends {
		fmt.Println(v)
	}
	return 0
}

// feedChildRun is a feedRecorder process.
type feedChildRun struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	ends map[string]bool // values whose end it was given
}

// settle waits until the child's recorder has been given the end of every hold
// of log, and has written it (a flush later).
func (c *feedChildRun) settle(t *testing.T, log []hold) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c.mu.Lock()
		missing := 0
		for _, h := range log {
			if !c.ends[h.value] {
				missing++
			}
		}
		c.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the feed gave %d of %d ends within 20 s", len(log)-missing, len(log))
		}
	}
	time.Sleep(FlushEvery + coverLag + 500*time.Millisecond)
}

// kill SIGKILLs the child.
func (c *feedChildRun) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
}

// startFeedChild starts a feedRecorder process and waits until its feed is up.
func startFeedChild(t *testing.T, dir string, servers []*redistest.Server) *feedChildRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), feedChild+"="+dir, "HISTORY_FEED_ADDRS="+strings.Join(redistest.Addrs(servers), ","))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := &feedChildRun{cmd: cmd, ends: map[string]bool{}}
	up := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		up <- sc.Scan() && sc.Text() == "up"
		for sc.Scan() {
			c.mu.Lock()
			c.ends[sc.Text()] = true
			c.mu.Unlock()
		}
	}()
	select {
	case ok := <-up:
		if !ok {
			t.Fatal("the recording process ended before its feed was up")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the recording process's feed is not up within 15 s")
	}
	return c
}

func TestAKilledRecorderRestartsOnItsStore(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	dir := t.TempDir()
	child := startFeedChild(t, dir, servers)
	log := runWorkload(t, servers, 2*time.Second)
	child.settle(t, log)
	child.kill()
	killed := time.Now()

	child = startFeedChild(t, dir, servers)
	more := runWorkload(t, servers, 2*time.Second)
	child.settle(t, more)
	child.kill()
	log = append(log, more...)

	s := openTest(t, dir, Options{ReadOnly: true})
	late := 0
	for _, h := range log {
		if h.expires {
			continue
		}
		mid := h.acquired.Add(h.released.Sub(h.acquired) / 2)
		a, err := s.At(Select{Resources: []string{h.resource}}, mid)
		if err != nil {
			t.Fatal(err)
		}
		if feedLate(a) {
			late++
			continue
		}
		if a.Unknown != "" || len(a.Holders) != 1 || a.Holders[0].Value != h.value {
			t.Errorf("%s at the midpoint of a hold of %s: %+v", h.resource, h.value, a)
		}
	}
	checkLate(t, late, len(log))
	// From the last write before the kill to the restart nothing was recording:
	// unknown.
	a, err := s.At(Select{}, killed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Unknown, "not running") {
		t.Errorf("while no recorder ran: %+v, want unknown", a)
	}
}

// feedIsUp reports whether feed follows every master, as serve asks it.
func feedIsUp(feed *live.Feed) func() bool {
	return func() bool {
		for _, st := range feed.Status() {
			if !st.Up {
				return false
			}
		}
		return true
	}
}
