package live

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// feedRun is a Feed running on its own goroutine, its events collected.
type feedRun struct {
	f      *Feed
	mu     sync.Mutex
	events []Event
	stop   func()
}

// startFeed runs a feed of servers (as users, when given) on keys of pattern ks:*,
// and waits until every master's feed is up.
func startFeed(t *testing.T, servers []*redistest.Server, users ...string) *feedRun {
	t.Helper()
	cfg := config.Default()
	cfg.AuditLog = ""
	cfg.Inspect.Patterns = []string{"ks:*"}
	if err := cfg.SetMasters(redistest.Addrs(servers)); err != nil {
		t.Fatal(err)
	}
	for i, u := range users {
		cfg.Masters[i].Username, cfg.Masters[i].Password = u, "pw"
	}
	r := &feedRun{f: New(cfg)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.f.Run(ctx, func(e Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() })
	}()
	r.stop = func() { cancel(); <-done }
	t.Cleanup(r.stop)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		up := 0
		for _, st := range r.f.Status() {
			if st.Up {
				up++
			}
		}
		if up == len(servers) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the feed is not up on every master within 10 s: %+v", r.f.Status())
		}
	}
	time.Sleep(2 * markEvery) // past the sync's mark
	return r
}

// end returns the first event of key that ends a lifecycle, waiting up to 5 s.
func (r *feedRun) end(t *testing.T, key string) Event {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		r.mu.Lock()
		for _, e := range r.events {
			if e.Key == key && e.Ends() {
				r.mu.Unlock()
				return e
			}
		}
		r.mu.Unlock()
	}
	t.Fatalf("no end of %s within 5 s; events: %+v", key, r.all())
	return Event{}
}

func (r *feedRun) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// of returns the events of key.
func (r *feedRun) of(key string) []Event {
	var out []Event
	for _, e := range r.all() {
		if e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// writer sends the test's own commands, counted per server, so that the servers'
// command statistics can be held to them.
type writer struct {
	t    *testing.T
	sent map[*redistest.Server]map[string]int
}

func (w *writer) do(s *redistest.Server, args ...any) {
	w.t.Helper()
	if _, err := s.Do(args[0].(string), args[1:]...); err != nil {
		w.t.Fatalf("%s %v: %v", s.Addr, args, err)
	}
	name := strings.ToLower(args[0].(string))
	if name == "config" {
		name += "|" + strings.ToLower(args[1].(string))
	}
	if w.sent[s] == nil {
		w.sent[s] = map[string]int{}
	}
	w.sent[s][name]++
}

// evict makes s evict every key (it holds only the test's lock keys) and then take
// writes again.
func (w *writer) evict(s *redistest.Server) {
	w.do(s, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	w.do(s, "CONFIG", "SET", "maxmemory", "1")
	w.do(s, "CONFIG", "SET", "maxmemory", "0")
}

// On a fleet where two masters have keyspace notifications (one with keyevent
// channels, one with keyspace channels only) and one has none, lifecycles are named
// from the notifications: released, expired and evicted, with source keyspace, each
// counted on all three masters. The master without them is fed by tracking, and its
// status says why; no master is sent a write, nor CONFIG SET, by the feed.
func TestFeedNamesChangesFromKeyspaceNotifications(t *testing.T) {
	servers := []*redistest.Server{
		redistest.Start(t, redistest.Options{Config: []string{"notify-keyspace-events AE"}}),
		redistest.Start(t, redistest.Options{Config: []string{"notify-keyspace-events Kg$xe"}}),
		redistest.Start(t, redistest.Options{}),
	}
	w := &writer{t: t, sent: map[*redistest.Server]map[string]int{}}
	before := make([]map[string]int, len(servers))
	for i, s := range servers {
		before[i] = s.CommandCalls(t)
	}
	r := startFeed(t, servers)
	st := r.f.Status()
	if st[0].Source != SourceKeyspace || st[1].Source != SourceKeyspace || st[2].Source != SourceTracking {
		t.Fatalf("status %+v: want keyspace, keyspace, tracking", st)
	}
	if !strings.Contains(st[2].Note, `notify-keyspace-events is ""`) {
		t.Errorf("the master without notifications: note %q, want it to say notify-keyspace-events is off", st[2].Note)
	}
	// The set and the removal that decide each lifecycle are the second master's,
	// which names them: masters in order, a few milliseconds apart.
	inOrder := func(args ...any) {
		for _, s := range servers {
			w.do(s, args...)
			time.Sleep(5 * time.Millisecond)
		}
	}
	inOrder("SET", "ks:rel", "v-rel", "NX", "PX", 60000)
	time.Sleep(100 * time.Millisecond)
	inOrder("DEL", "ks:rel")
	r.end(t, "ks:rel")
	for i, s := range servers {
		w.do(s, "SET", "ks:exp", "v-exp", "NX", "PX", 300+100*i) // the second to expire is m2
		time.Sleep(5 * time.Millisecond)
	}
	r.end(t, "ks:exp")
	time.Sleep(200 * time.Millisecond) // m3's too: the evictions below take every key
	inOrder("SET", "ks:ev", "v-ev", "NX", "PX", 60000)
	time.Sleep(100 * time.Millisecond)
	w.evict(servers[0])
	time.Sleep(5 * time.Millisecond)
	w.evict(servers[1])
	for key, want := range map[string]string{"ks:rel": Released, "ks:exp": Expired, "ks:ev": Evicted} {
		e := r.end(t, key)
		if e.Event != want || e.Source != SourceKeyspace || e.Masters != 3 || e.Value != "v-"+key[3:] {
			t.Errorf("%s ended with %+v: want %s from keyspace, on 3 masters, value v-%s", key, e, want, key[3:])
		}
		acq := r.of(key)
		if len(acq) != 2 || acq[0].Event != Acquired || acq[0].Source != SourceKeyspace {
			t.Errorf("%s: events %+v, want one acquired (from keyspace) and its end", key, acq)
		}
	}
	if e := r.end(t, "ks:exp"); e.HeldMs == nil || *e.HeldMs < 390 || *e.HeldMs > 600 {
		t.Errorf("ks:exp expired after %s ms, want about 400 (its second master's TTL)", fmtMsTest(e.HeldMs))
	}
	r.stop()
	for i, s := range servers {
		after := s.CommandCalls(t)
		for cmd, n := range after {
			if n -= before[i][cmd] + w.sent[s][cmd]; n > 0 && !feedCommands[cmd] {
				t.Errorf("m%d: the feed sent %s %d times", i+1, cmd, n)
			}
		}
		if after["config|get"] == before[i]["config|get"] {
			t.Errorf("m%d: the feed never read notify-keyspace-events", i+1)
		}
	}
}

// feedCommands are the commands the feed may send (and INFO, the test's own reads).
var feedCommands = map[string]bool{
	"client|id": true, "client|tracking": true, "config|get": true, "subscribe": true, "psubscribe": true,
	"ping": true, "scan": true, "info": true,
	// the key reader's (poll.ReadKeys)
	"type": true, "pttl": true, "get": true, "hscan": true, "zrange": true, "lrange": true,
}

// Without notifications the lifecycles come from tracking, as before; with them, a
// user whose ACL refuses CONFIG GET, or their channels, is fed by tracking alone, and
// the status names the permission.
func TestFeedWithoutKeyspaceNotificationsUsesTracking(t *testing.T) {
	plain := redistest.StartN(t, 3, redistest.Options{})
	r := startFeed(t, plain)
	for _, s := range plain {
		if _, err := s.Do("SET", "ks:a", "v", "NX", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	for _, s := range plain {
		if _, err := s.Do("DEL", "ks:a"); err != nil {
			t.Fatal(err)
		}
	}
	if e := r.end(t, "ks:a"); e.Event != Released || e.Source != SourceTracking {
		t.Errorf("ended with %+v, want released from tracking", e)
	}
	r.stop()

	acl := redistest.StartN(t, 3, redistest.Options{Config: []string{"notify-keyspace-events AE"},
		Users: []string{"ro on >pw ~* &* +@read +ping +client|id +client|tracking +subscribe +psubscribe -@write"}})
	r = startFeed(t, acl, "ro", "ro", "ro")
	for _, st := range r.f.Status() {
		if st.Source != SourceTracking || !strings.Contains(st.Note, "config|get") {
			t.Errorf("status %+v: want tracking, and a note naming +config|get", st)
		}
	}
	r.stop()

	// Refused the notifications' channels: tracking, and the note names them.
	acl = redistest.StartN(t, 3, redistest.Options{Config: []string{"notify-keyspace-events AE"},
		Users: []string{"ro on >pw ~* &__redis__:invalidate +@read +ping +client|id +client|tracking +config|get +subscribe -@write"}})
	r = startFeed(t, acl, "ro", "ro", "ro")
	for _, st := range r.f.Status() {
		if st.Source != SourceTracking || !strings.Contains(st.Note, "&__keyevent@0__:*") {
			t.Errorf("status %+v: want tracking, and a note naming the channels &__keyevent@0__:*", st)
		}
	}
}

// A user whose ACL refuses CLIENT TRACKING, on masters with keyspace notifications, is
// fed by the notifications alone (not polled), and the status says so.
func TestFeedOnKeyspaceNotificationsAlone(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{Config: []string{"notify-keyspace-events AE"},
		Users: []string{"ro on >pw ~* &* +@read +ping +client|id +config|get +subscribe +psubscribe -@write"}})
	r := startFeed(t, servers, "ro", "ro", "ro")
	for _, st := range r.f.Status() {
		if st.Source != SourceKeyspace || st.Degraded != "" || !strings.Contains(st.Note, "client|tracking") {
			t.Errorf("status %+v: want keyspace, not degraded, a note naming client|tracking", st)
		}
	}
	for _, s := range servers {
		if _, err := s.Do("SET", "ks:a", "v", "NX", "PX", 200); err != nil {
			t.Fatal(err)
		}
	}
	if e := r.end(t, "ks:a"); e.Event != Expired || e.Source != SourceKeyspace || e.Value != "v" {
		t.Errorf("ended with %+v, want expired from keyspace, value v", e)
	}
}
