package e2e

import (
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// soakFault is one entry of the fault schedule: what it does to which master, and how
// serve's /metrics must show it and then show it gone.
type soakFault struct {
	name, target         string
	visibleBy, clearedBy string // in words, for the report
	// hold injects the fault, holds it, heals it, and returns.
	hold    func()
	visible func(before, now *scrapeSample) bool
	cleared func(now *scrapeSample) bool
	// downOK: the master does not answer while it lasts, so the console may show it down.
	downOK bool
	// dropsSolo: the master may lose solo:NAME (replanted when the fault ends).
	dropsSolo bool
	// polls it may take to show and to clear: 2, or inspect.health_every for what
	// only the health read (INFO, CONFIG GET) sees.
	polls int
	// happensAtEnd: what the fault changes happens when hold returns, not when it
	// starts (a Sentinel failover: the promotion itself takes 1-3 s, longer on a
	// loaded machine, and nothing can see it before): it must show within its bound
	// of that.
	happensAtEnd bool
}

// bound is how late the fault may show, or clear: its polls (a poll starting just
// before the change, the next ones seeing it), the read timeout, and a scrape period.
func (f *soakFault) bound() time.Duration {
	return time.Duration(f.polls)*soakPoll + soakTimeout + 500*time.Millisecond
}

// faultRun is one injection of a fault, as the report gives it.
type faultRun struct {
	Fault          string    `json:"fault"`
	Master         string    `json:"master"`
	Start          time.Time `json:"start"`
	End            time.Time `json:"end"`
	VisibleBy      string    `json:"visible_by"`
	ClearedBy      string    `json:"cleared_by"`
	BoundMs        float64   `json:"bound_ms"`         // how late it may show, and clear
	VisibleAfterMs float64   `json:"visible_after_ms"` // after Start (End where it happens at its end); -1: never within its slot
	ClearedAfterMs float64   `json:"cleared_after_ms"` // after End; -1: never within its slot
	FeedGap        bool      `json:"feed_gap"`         // a gap event on the master during the fault
	Note           string    `json:"note,omitempty"`

	f *soakFault
}

// soakFaults is the schedule, in order; each runs in a slot of soakSlot.
func soakFaults(s *soak) []*soakFault {
	up := func(m string) func(*scrapeSample) bool {
		return func(n *scrapeSample) bool {
			return n.is(1, "redlockctl_master_up", "master", m) && n.is(1, "redlockctl_live_feed_up", "master", m) &&
				!n.is(1, "redlockctl_finding", "code", "down", "master", m)
		}
	}
	down := func(m string) func(_, n *scrapeSample) bool {
		return func(_, n *scrapeSample) bool {
			return n.is(0, "redlockctl_master_up", "master", m) && n.is(1, "redlockctl_finding", "code", "down", "master", m)
		}
	}
	// A silence that ends within a second past inspect.timeout is master_up 0 from the
	// poll that timed out until the next one, which its end answers: measured on one
	// master under DEBUG SLEEP 2 and scraped every 50 ms, 0-900 ms, and in 3 of 14
	// sleeps no scrape saw it. Each such poll counts in master_poll_errors_total,
	// which a scrape at any interval sees grow.
	downOrErrors := func(m string) func(b, n *scrapeSample) bool {
		return func(b, n *scrapeSample) bool {
			before, _ := b.value("redlockctl_master_poll_errors_total", "master", m)
			now, _ := n.value("redlockctl_master_poll_errors_total", "master", m)
			return down(m)(b, n) || now > before
		}
	}
	gapped := func(m string) func(b, n *scrapeSample) bool {
		return func(b, n *scrapeSample) bool {
			before, _ := b.value("redlockctl_live_feed_gaps_total", "master", m)
			now, _ := n.value("redlockctl_live_feed_gaps_total", "master", m)
			return now > before || n.is(0, "redlockctl_live_feed_up", "master", m)
		}
	}
	const upWords = "master_up 1, live_feed_up 1, no finding down"
	faults := []*soakFault{{
		name: "sigstop-5s", target: "m1", downOK: true,
		visibleBy: "master_up 0 and finding down", clearedBy: upWords,
		hold:    func() { s.plain[0].Pause(); time.Sleep(5 * time.Second); s.plain[0].Resume() },
		visible: down("m1"), cleared: up("m1"),
	}, {
		name: "kill9-restart-empty", target: "m2", downOK: true, dropsSolo: true,
		visibleBy: "master_up 0 and finding down", clearedBy: upWords,
		hold:    func() { s.plain[1].Kill(); time.Sleep(4 * time.Second); s.plain[1].Restart(false) },
		visible: down("m2"), cleared: up("m2"),
	}, {
		name: "client-kill-all", target: "m3",
		visibleBy: "live_feed_gaps_total grows or live_feed_up 0", clearedBy: upWords,
		hold: func() {
			for _, typ := range []string{"normal", "pubsub"} {
				if _, err := s.plain[2].Do("CLIENT", "KILL", "TYPE", typ); err != nil {
					s.fail("CLIENT KILL TYPE %s on m3: %v", typ, err)
				}
			}
		},
		visible: gapped("m3"), cleared: up("m3"),
	}, {
		name: "latency-200ms-6s", target: "m4",
		visibleBy: "master_rtt_seconds >= 0.2 and finding rtt-high", clearedBy: "master_rtt_seconds < 0.15, no finding rtt-high, master_up 1",
		hold: func() { s.proxy.SetDelay(200 * time.Millisecond); time.Sleep(6 * time.Second); s.proxy.SetDelay(0) },
		visible: func(_, n *scrapeSample) bool {
			rtt, ok := n.value("redlockctl_master_rtt_seconds", "master", "m4")
			return ok && rtt >= 0.2 && n.is(1, "redlockctl_finding", "code", "rtt-high", "master", "m4")
		},
		cleared: func(n *scrapeSample) bool {
			rtt, ok := n.value("redlockctl_master_rtt_seconds", "master", "m4")
			return ok && rtt < 0.15 && !n.is(1, "redlockctl_finding", "code", "rtt-high", "master", "m4") &&
				n.is(1, "redlockctl_master_up", "master", "m4")
		},
	}, {
		name: "sentinel-failover", target: "m5", downOK: true, happensAtEnd: true,
		visibleBy: "live_feed_gaps_total grows or live_feed_up 0 (from when the sentinels report the new master)", clearedBy: upWords + ", no finding not-master",
		hold: func() {
			old := s.group.Failover()
			s.group.WaitNewMaster(old, 30*time.Second)
		},
		visible: gapped("m5"),
		cleared: func(n *scrapeSample) bool {
			return up("m5")(n) && !n.is(1, "redlockctl_finding", "code", "not-master", "master", "m5")
		},
	}, {
		name: "maxmemory-allkeys-lru-6s", target: "m1", dropsSolo: true, polls: soakHealthEvery,
		visibleBy: "finding evicting-policy (read with INFO and CONFIG every health_every polls)", clearedBy: "no finding evicting-policy",
		hold: func() { s.evict(s.plain[0], 6*time.Second) },
		visible: func(_, n *scrapeSample) bool {
			return n.is(1, "redlockctl_finding", "code", "evicting-policy", "master", "m1")
		},
		cleared: func(n *scrapeSample) bool {
			return !n.is(1, "redlockctl_finding", "code", "evicting-policy", "master", "m1")
		},
	}, {
		name: "debug-sleep-2s", target: "m3", downOK: true,
		visibleBy: "master_up 0 and finding down, or master_poll_errors_total grows (2 s of silence is past inspect.timeout 1s; master_up 0 lasts until the sleep ends, under a second)", clearedBy: upWords,
		hold:    func() { s.debugSleep(s.plain[2], 2) },
		visible: downOrErrors("m3"), cleared: up("m3"),
	}}
	for _, f := range faults {
		f.polls = max(f.polls, 2)
	}
	return faults
}

// inject runs one fault and records it.
func (s *soak) inject(f *soakFault) {
	r := &faultRun{Fault: f.name, Master: f.target, VisibleBy: f.visibleBy, ClearedBy: f.clearedBy, f: f,
		BoundMs: ms(f.bound()), Start: time.Now()}
	s.mu.Lock()
	s.faults = append(s.faults, r)
	s.mu.Unlock()
	f.hold()
	if f.dropsSolo {
		s.plantSolo(f.target)
	}
	s.mu.Lock()
	r.End = time.Now()
	s.mu.Unlock()
	s.t.Logf("fault %s on %s: %v", f.name, f.target, r.End.Sub(r.Start).Round(time.Millisecond))
}

// evict sets maxmemory 16 KiB under what srv uses now, with allkeys-lru, for d, so
// that every write evicts (lock keys among them), then lifts it; the evictions are
// noted in the run.
func (s *soak) evict(srv *redistest.Server, d time.Duration) {
	used := infoField(s, srv, "memory", "used_memory") - 16<<10
	before := infoField(s, srv, "stats", "evicted_keys")
	for _, kv := range [][2]string{{"maxmemory-policy", "allkeys-lru"}, {"maxmemory", strconv.FormatInt(used, 10)}} {
		if _, err := srv.Do("CONFIG", "SET", kv[0], kv[1]); err != nil {
			s.fail("CONFIG SET %s %s: %v", kv[0], kv[1], err)
		}
	}
	time.Sleep(d)
	for _, kv := range [][2]string{{"maxmemory", "0"}, {"maxmemory-policy", "noeviction"}} {
		if _, err := srv.Do("CONFIG", "SET", kv[0], kv[1]); err != nil {
			s.fail("CONFIG SET %s %s: %v", kv[0], kv[1], err)
		}
	}
	n := infoField(s, srv, "stats", "evicted_keys") - before
	s.mu.Lock()
	s.faults[len(s.faults)-1].Note = strconv.FormatInt(n, 10) + " keys evicted"
	s.mu.Unlock()
	if n == 0 {
		s.fail("maxmemory fault: no key was evicted: the fault proves nothing")
	}
}

// debugSleep makes srv sleep secs seconds (DEBUG SLEEP) and waits for it to answer.
func (s *soak) debugSleep(srv *redistest.Server, secs int) {
	c, err := redis.Dial("tcp", srv.Addr, redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(time.Duration(secs+5)*time.Second), redis.DialWriteTimeout(2*time.Second))
	if err != nil {
		s.fail("DEBUG SLEEP: dial %s: %v", srv.Addr, err)
		return
	}
	defer c.Close()
	if _, err := c.Do("DEBUG", "SLEEP", secs); err != nil {
		s.fail("DEBUG SLEEP %d on %s: %v", secs, srv.Addr, err)
	}
}

// infoField reads one integer field of an INFO section.
func infoField(s *soak, srv *redistest.Server, section, field string) int64 {
	info, err := redis.String(srv.Do("INFO", section))
	if err != nil {
		s.fail("INFO %s on %s: %v", section, srv.Addr, err)
		return 0
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
