package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// Workloads a schedule may run (each on its own key).
const (
	WPipelined  = "pipelined"  // this library: all masters at once, decided at the quorum
	WKeepAlive  = "keepalive"  // this library's Do: extended every ttl/3, some overrun
	WSequential = "sequential" // redsync-style: one master after another
	WRun        = "run"        // proves its lease: extended at once, then every ttl/3 (as `redlockctl run` did)
	WFenced     = "fenced"     // fenced locks: a counter key beside the lock
	WReacquire  = "reacquire"  // a worker loop: release, then take it again at once
	WHandoff    = "handoff"    // a release and the next acquisition in one write
	WRace       = "race"       // several clients racing for one key
	WRedisson   = "redisson"   // Redisson's hash lock
	WPlainHash  = "plainhash"  // a hash that is not Redisson's (Sidekiq-like)
)

// AllWorkloads lists every workload, in the order a schedule draws them from.
var AllWorkloads = []string{WPipelined, WKeepAlive, WSequential, WRun, WFenced, WReacquire, WHandoff, WRace, WRedisson, WPlainHash}

// Schedule is one seeded world: its masters' links and the workloads on them.
type Schedule struct {
	Seed      uint64
	Masters   int
	Sub       []Latency // each master's subscription link
	Client    []Latency // each master's client links
	Cost      []time.Duration
	Workloads []string
	Active    time.Duration // how long clients start new work
	Faults    []Fault
	Stalls    []Stall
	FeedStall *FeedStall
	Keyspace  bool // the masters publish keyspace notifications (notify-keyspace-events Eg$xe)
	// FeedLag is a feed that handles everything FeedLag after it came (dated when it
	// came), as a feed short of CPU on a busy host does: its reads go out that late.
	// Never drawn: set by -sim.feedlag.
	FeedLag time.Duration
	// FeedSkew is a feed whose reading of each master runs late by its own random
	// amount, up to FeedSkew (in order for each master), and stamps what it reads
	// then, as the reader goroutines of a feed short of CPU do: the order of one
	// master's changes against another's is lost. Never drawn: set by -sim.feedskew.
	FeedSkew time.Duration
	// Keys runs each workload on this many keys at once, each with clients of its own
	// (0 or 1: one). Never drawn: set by -sim.keys.
	Keys int
}

// Fault is a master's subscription cut at At for Down; with Lag > 0, a failover to a
// replica that lagged by Lag. With Evict, it is instead an eviction at At of every
// lock key the master holds (maxmemory). With Evicting, the master is instead just
// over its maxmemory from At for Down: before a command now and then, it evicts one
// key (allkeys-lru on a few keys: any of them), as Redis does before running a command
// while over the limit.
type Fault struct {
	Master          int
	At, Down, Lag   time.Duration
	Evict, Evicting bool
}

// evictShare is the share of commands an Evicting master evicts a key before.
const evictShare = 0.02

// Stall is a master whose process is taken off its core now and then, as on a busy
// host: every Every on average (uniformly up to twice that), for up to Max. Commands
// that arrive meanwhile run together in its next event-loop iteration, so that a
// release and the next acquisition of a key are more often one invalidation.
type Stall struct {
	Master     int
	Every, Max time.Duration
}

// FeedStall is the feed's own process taken off its core now and then, as on a busy
// host: every Every on average (uniformly up to twice that), for up to Max. What reaches
// the feed meanwhile (invalidations, marks, read replies) waits, and is handled in
// order when it is back, as read then: a burst.
type FeedStall struct {
	Every, Max time.Duration
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d masters, workloads %v, active %v, keyspace notifications %v\n", s.Seed, s.Masters, s.Workloads, s.Active, s.Keyspace)
	for _, f := range s.Faults {
		if f.Evicting {
			fmt.Fprintf(&b, "  fault: m%d evicts a key before a command now and then from %v for %v\n", f.Master, f.At, f.Down)
			continue
		}
		if f.Evict {
			fmt.Fprintf(&b, "  fault: m%d evicts its keys at %v\n", f.Master, f.At)
			continue
		}
		fmt.Fprintf(&b, "  fault: m%d cut at %v for %v, failover lag %v\n", f.Master, f.At, f.Down, f.Lag)
	}
	if s.Keys > 1 {
		fmt.Fprintf(&b, "  each workload on %d keys\n", s.Keys)
	}
	if s.FeedSkew > 0 {
		fmt.Fprintf(&b, "  feed skew: reads each master up to %v late\n", s.FeedSkew)
	}
	if s.FeedLag > 0 {
		fmt.Fprintf(&b, "  feed lag: handles everything %v after it came\n", s.FeedLag)
	}
	if f := s.FeedStall; f != nil {
		fmt.Fprintf(&b, "  feed stall: off its core every %v for up to %v\n", f.Every, f.Max)
	}
	for _, st := range s.Stalls {
		fmt.Fprintf(&b, "  stall: m%d off its core every %v for up to %v\n", st.Master, st.Every, st.Max)
	}
	for i := range s.Masters {
		fmt.Fprintf(&b, "  m%d: sub %v+%v client %v+%v cost %v\n", i, s.Sub[i].Base, s.Sub[i].Jitter, s.Client[i].Base, s.Client[i].Jitter, s.Cost[i])
	}
	return b.String()
}

// NewSchedule draws a schedule from seed; only names the workloads to run (nil: drawn
// from every workload).
func NewSchedule(seed uint64, only []string) Schedule {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	s := Schedule{Seed: seed, Masters: 3 + 2*r.IntN(2), Active: time.Duration(800+r.IntN(1200)) * time.Millisecond}
	d := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	lagging := -1
	if r.IntN(4) == 0 {
		lagging = r.IntN(s.Masters)
	}
	for i := range s.Masters {
		sub := Latency{d(20*time.Microsecond, 2*time.Millisecond), d(0, time.Millisecond)}
		if i == lagging {
			sub.Base = d(10*time.Millisecond, 40*time.Millisecond)
		}
		s.Sub = append(s.Sub, sub)
		s.Client = append(s.Client, Latency{d(50*time.Microsecond, time.Millisecond), d(0, 500*time.Microsecond)})
		s.Cost = append(s.Cost, d(2*time.Microsecond, 40*time.Microsecond))
	}
	switch r.IntN(8) {
	case 0, 1:
		f := Fault{Master: r.IntN(s.Masters), At: d(200*time.Millisecond, s.Active-200*time.Millisecond), Down: d(50*time.Millisecond, 500*time.Millisecond)}
		if r.IntN(2) == 0 {
			f.Lag = d(5*time.Millisecond, 100*time.Millisecond)
		}
		s.Faults = append(s.Faults, f)
	case 2:
		s.Faults = append(s.Faults, Fault{Master: r.IntN(s.Masters), At: d(200*time.Millisecond, s.Active-200*time.Millisecond), Evict: true})
	}
	s.Keyspace = r.IntN(4) == 0
	if er := rand.New(rand.NewPCG(seed, 0xe71c7)); er.IntN(8) == 0 {
		// Drawn apart, as the stalls below: the draws above stay what they were.
		s.Faults = append(s.Faults, Fault{Master: er.IntN(s.Masters), Evicting: true,
			At: time.Duration(er.Int64N(int64(s.Active / 2))), Down: time.Duration(200+er.IntN(800)) * time.Millisecond})
	}
	// Drawn apart, so that the draws above are the same with and without stalls.
	if sr := rand.New(rand.NewPCG(seed, 0x57a11)); sr.IntN(4) == 0 {
		for i := range s.Masters {
			s.Stalls = append(s.Stalls, Stall{Master: i, Every: time.Duration(5+sr.IntN(46)) * time.Millisecond,
				Max: time.Duration(500+sr.IntN(4501)) * time.Microsecond})
		}
	}
	if fr := rand.New(rand.NewPCG(seed, 0xfeed0ff)); fr.IntN(4) == 0 {
		s.FeedStall = &FeedStall{Every: time.Duration(20+fr.IntN(181)) * time.Millisecond,
			Max: time.Duration(5+fr.IntN(96)) * time.Millisecond}
	}
	pool := only
	if len(pool) == 0 {
		pool = AllWorkloads
	}
	n := 1 + r.IntN(min(3, len(pool)))
	for _, i := range r.Perm(len(pool))[:n] {
		s.Workloads = append(s.Workloads, pool[i])
	}
	return s
}

// Tolerance is how far the feed's times may be from the clients' own: the slowest
// links there and back, twice, and a few milliseconds of iterations.
func (s Schedule) Tolerance() time.Duration {
	var sub, cl time.Duration
	for i := range s.Masters {
		sub = max(sub, s.Sub[i].Base+s.Sub[i].Jitter)
		cl = max(cl, s.Client[i].Base+s.Client[i].Jitter)
	}
	t := 2*(sub+cl) + 10*time.Millisecond
	if s.FeedStall != nil {
		t += s.FeedStall.Max // a feed off its core sees what came meanwhile only when it is back
	}
	return t
}

// Run runs the schedule and returns the world, its events and its clients' log.
func Run(s Schedule, trace func(at int64, format string, args ...any)) *World {
	w := &World{now: epoch, rng: rand.New(rand.NewPCG(s.Seed, 0xfeed)), q: s.Masters/2 + 1, Trace: trace, keyspace: s.Keyspace, feedLag: int64(s.FeedLag),
		feedSkew: int64(s.FeedSkew), skewRng: rand.New(rand.NewPCG(s.Seed, 0x5ce3)), skewLast: make([]int64, s.Masters)}
	names := make([]string, s.Masters)
	for i := range s.Masters {
		names[i] = fmt.Sprintf("m%d", i+1)
		m := &Master{w: w, i: i, data: map[string]*Val{}, cost: s.Cost[i], sub: s.Sub[i], subUp: true, clientLt: s.Client[i]}
		m.reader = &conn{m: m, lat: s.Client[i], rng: rand.New(rand.NewPCG(s.Seed, 0x4ead0+uint64(i)))}
		w.masters = append(w.masters, m)
	}
	w.tr = live.NewTracker(names, w.q, func(k string) string { return k }, func(e live.Event) {
		w.trace("EVENT %s %s %q", e.Event, e.Key, e.Value)
		w.Events = append(w.Events, e)
	}, w.ask)
	w.tr.WatchStalls() // the world ticks it when Next says (see armTick)
	start := time.Unix(0, w.now)
	for i, m := range w.masters {
		w.tr.SyncStart(i, nil)
		w.tr.SyncEnd(i, nil, start, live.SourcePoll)
		w.after(time.Duration(w.rng.Int64N(int64(markEvery))), func() { w.mark(m) })
		w.after(time.Duration(w.rng.Int64N(int64(cronEvery))), m.cron)
	}
	for i, name := range s.Workloads {
		if s.Keys <= 1 {
			w.startWorkload(name, fmt.Sprintf("lk:%s%d", name, i))
			continue
		}
		for k := range s.Keys {
			w.startWorkload(name, fmt.Sprintf("lk:%s%d-%d", name, i, k))
		}
	}
	for _, f := range s.Faults {
		if f.Evicting {
			m := w.masters[f.Master]
			m.evictFrom, m.evictTo = epoch+int64(f.At), epoch+int64(f.At+f.Down)
			m.evictRng = rand.New(rand.NewPCG(s.Seed, 0xe71c7+1))
			continue
		}
		if f.Evict {
			w.after(f.At, func() { w.evict(w.masters[f.Master]) })
			continue
		}
		w.after(f.At, func() { w.cut(w.masters[f.Master], f.Down, f.Lag) })
	}
	for _, st := range s.Stalls {
		w.stalls(w.masters[st.Master], st, rand.New(rand.NewPCG(s.Seed, 0x57a11+uint64(st.Master)+1)))
	}
	if f := s.FeedStall; f != nil {
		w.feedStalls(*f, rand.New(rand.NewPCG(s.Seed, 0xfeed0ff+1)))
	}
	w.after(s.Active, func() { w.stopped = true })
	w.run(w.now + int64(s.Active) + int64(3*time.Second))
	return w
}

func (w *World) ms(lo, hi int) func() time.Duration {
	return func() time.Duration { return time.Duration(lo+w.rng.IntN(hi-lo+1)) * time.Millisecond }
}

func (w *World) startWorkload(name, key string) {
	own := redlockctlValue("host:" + name)
	c := w.newClient(name, "pipelined", own)
	lock := worker{key: key, library: "redlockctl", pause: w.ms(5, 80)}
	switch name {
	case WPipelined:
		lock.ttl, lock.hold = 500*time.Millisecond, w.ms(1, 150)
	case WKeepAlive:
		lock.ttl, lock.hold, lock.extend, lock.overrun = 300*time.Millisecond, w.ms(200, 700), true, 0.15
	case WSequential:
		c.style = "sequential"
		c.values = func(n int) string { return fmt.Sprintf("%022x==", uint64(n)*0x9e3779b97f4a7c15) }
		lock.library = ""
		lock.ttl, lock.hold = 500*time.Millisecond, w.ms(1, 120)
	case WRun:
		lock.ttl, lock.hold, lock.extend, lock.early = 300*time.Millisecond, w.ms(150, 600), true, true
		lock.pause = w.ms(0, 300)
	case WFenced:
		lock.ttl, lock.hold, lock.fenced = 500*time.Millisecond, w.ms(1, 100), true
		c.values = func(n int) string { return own(n) + "#" + itoa(int64(n)) }
	case WReacquire:
		lock.ttl, lock.hold, lock.pause = 500*time.Millisecond, w.ms(1, 20), func() time.Duration { return 0 }
	case WHandoff:
		w.runHandoff(c, key, 500*time.Millisecond, w.ms(1, 80))
		return
	case WRace:
		for i := range 3 {
			ci := w.newClient(fmt.Sprintf("%s-%d", name, i), "pipelined", redlockctlValue(fmt.Sprintf("host:%s-%d", name, i)))
			wk := worker{key: key, library: "redlockctl", ttl: 500 * time.Millisecond, hold: w.ms(20, 120), pause: w.ms(0, 30)}
			w.runWorker(ci, wk)
		}
		return
	case WRedisson:
		c.values = func(n int) string { return fmt.Sprintf("6f1d2c3b-aaaa-4bbb-8ccc-%012x:%d", n, 40+n%5) }
		lock.library, lock.ttl, lock.hold = "redisson", 500*time.Millisecond, w.ms(1, 150)
		lock.set = func(key, value string, ttl time.Duration) op { return hsetNX(key, value, ttl) }
	case WPlainHash:
		c.values = func(n int) string { return fmt.Sprintf("jid-%d", n) }
		lock.library, lock.notLib, lock.ttl, lock.hold = "", "redisson", 500*time.Millisecond, w.ms(1, 150)
		lock.set = func(key, value string, ttl time.Duration) op { return hsetNX(key, value, ttl) }
	default:
		panic("sim: unknown workload " + name)
	}
	w.runWorker(c, lock)
}
