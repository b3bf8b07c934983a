package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// BenchmarkLive measures the live feed (`redlockctl events`, the binary with its
// defaults) against a real lock library's own log of what it did: redsync, then this
// project's library, each with 24 workers holding locks for 2 ms on 5 masters, every
// 500th lock let expire. Beside each, in the same run, the same workload without a
// feed and with a bare CLIENT TRACKING subscriber that only counts invalidations (the
// floor of any live signal): server CPU per lock cycle is read from INFO cpu.
//
// It runs twice: on masters as they come ("tracking"), and on masters where
// keyspace notifications are on ("keyspace": notify-keyspace-events Eg$xe, as an
// operator would have set it), which the feed then hears beside its invalidations;
// there every phase, the one without a feed too, runs with the notifications on.
//
// A third part ("contention") has each library's workers race in pairs for a key
// (churn -race-start), and counts the contended events against the failed attempts
// that reached a master (see benchContention).
//
// Four more parts run this project's library's other patterns (churn -mode), each on
// masters as they come, without a feed, with the bare subscriber and with the feed
// (see benchPattern): "do" (Client.Do with keep-alive, some holders overrunning),
// "reacquire" (release, then acquire the key again at once), "fenced" (fenced locks,
// whose <key>:fence counters are no locks) and "run" (`redlockctl run` jobs).
//
// Run it with `make bench-live`; REDLOCKCTL_BENCH_LIVE_SECONDS sets each phase's length
// (default 10).
func BenchmarkLive(b *testing.B) {
	b.Run("tracking", func(b *testing.B) { benchLive(b, redistest.Options{}, false) })
	b.Run("keyspace", func(b *testing.B) {
		benchLive(b, redistest.Options{Config: []string{"notify-keyspace-events Eg$xe"}}, false)
	})
	b.Run("starved", func(b *testing.B) { benchLive(b, redistest.Options{}, true) })
	b.Run("contention", benchContention)
	for _, mode := range []string{"do", "reacquire", "fenced", "run"} {
		b.Run(mode, func(b *testing.B) { benchPattern(b, mode) })
	}
	b.Run("idle", benchIdle)
}

// benchIdle measures what the feed costs masters that nothing changes: 5 masters
// without a feed, then with one, each for the phase's length (INFO cpu, all five).
// It is the feed's fixed cost (its marks: a PING on each subscription every
// markEvery), which weighs on a workload of few cycles a second.
func benchIdle(b *testing.B) {
	secs := benchLiveSeconds()
	servers := redistest.StartN(b, 5, redistest.Options{})
	cfg := liveConfig(b, servers, "", "live:*")
	idle := func() float64 {
		return serverCPU(b, servers, func() []churnRecord {
			time.Sleep(time.Duration(secs) * time.Second)
			return nil
		}) / float64(secs)
	}
	for range b.N {
		none := idle()
		ev := startEvents(b, cfg)
		time.Sleep(500 * time.Millisecond)
		feed := idle()
		ev.stop(b)
		b.Logf("idle masters: %.2f ms of CPU a second in all without a feed, %.2f with one (+%.2f)", none*1e3, feed*1e3, (feed-none)*1e3)
		b.ReportMetric(none*1e3, "nofeed-cpu-ms/s")
		b.ReportMetric(feed*1e3, "feed-cpu-ms/s")
	}
}

// benchLiveSeconds is each phase's length.
func benchLiveSeconds() int {
	if s, err := strconv.Atoi(os.Getenv("REDLOCKCTL_BENCH_LIVE_SECONDS")); err == nil && s > 0 {
		return s
	}
	return 10
}

// benchContention runs each library's 24 workers racing in pairs for 12 keys on 5
// masters (each round's attempts start together, so their SETs split the masters; the
// winner holds 200 ms), under the feed, and logs how many of the failed attempts that
// reached a master (the workload's own log says how many) were reported contended,
// matched one to one by key, time and masters, beside the lifecycles' counts.
func benchContention(b *testing.B) {
	secs := benchLiveSeconds()
	servers := redistest.StartN(b, 5, redistest.Options{})
	cfg := liveConfig(b, servers, "", "live:*")
	addrs := strings.Join(redistest.Addrs(servers), ",")
	bin := buildChurn(b)
	for range b.N {
		for _, lib := range []string{"redsync", "redlock"} {
			ev := startEvents(b, cfg)
			time.Sleep(500 * time.Millisecond)
			recs := mustChurn(b, bin, "-lib", lib, "-addrs", addrs, "-prefix", "live:", "-workers", "24", "-keys", "12",
				"-race-start", "-hold", "200ms", "-ttl", "5s", "-duration", fmt.Sprint(secs, "s"))
			time.Sleep(500 * time.Millisecond)
			events := ev.stop(b)
			want, got, f := countEnds(recs), countKinds(events), judgeContention(recs, events)
			detected := 100 * float64(f.matched) / float64(max(f.reached, 1))
			b.Logf("%s: %d rounds, acquired %d (%+.2f%%), released %d (%+.2f%%); %d failed attempts, %d reached a master %v; contended %d, matched %d (%.1f%% of those; %d naming as many masters %v), unmatched %d",
				lib, want["released"], got["acquired"], pct(got["acquired"], want["released"]), got["released"], pct(got["released"], want["released"]),
				f.failed, f.reached, f.loggedBy, f.contended, f.matched, detected, f.exact, f.seenBy, len(f.unmatched))
			b.ReportMetric(detected, lib+"-contended-%")
			b.ReportMetric(float64(len(f.unmatched)), lib+"-contended-unmatched")
		}
	}
}

// benchLive runs the cycle phases on five masters started with opts; starved runs a
// busy loop per core beside the feed (and everything else), as on a host with more
// work than cores.
func benchLive(b *testing.B, opts redistest.Options, starved bool) {
	secs := benchLiveSeconds()
	servers := redistest.StartN(b, 5, opts)
	cfg := liveConfig(b, servers, "", "live:*")
	addrs := strings.Join(redistest.Addrs(servers), ",")
	workload := func(lib string) []string {
		return []string{"-lib", lib, "-addrs", addrs, "-prefix", "live:", "-workers", "24", "-hold", "2ms",
			"-ttl", "1s", "-duration", fmt.Sprint(secs, "s"), "-overrun-every", "500", "-overrun-ttl", "300ms"}
	}
	bin := buildChurn(b)
	for range b.N {
		var invals atomic.Int64
		for _, lib := range []string{"redsync", "redlock"} {
			if l := os.Getenv("REDLOCKCTL_BENCH_LIVE_LIBS"); l != "" && !slices.Contains(strings.Split(l, ","), lib) {
				continue
			}
			base := serverCPU(b, servers, func() []churnRecord { return mustChurn(b, bin, workload(lib)...) })
			stop := bareTracking(b, servers, &invals)
			floor := serverCPU(b, servers, func() []churnRecord { return mustChurn(b, bin, workload(lib)...) })
			stop()
			var stopHog func()
			if starved {
				stopHog = hog(b)
			}
			ev := startEvents(b, cfg)
			time.Sleep(500 * time.Millisecond)
			cpu0 := procCPU(ev.cmd.Process.Pid)
			stats0 := commandStats(b, servers)
			var recs []churnRecord
			feed := serverCPU(b, servers, func() []churnRecord {
				recs = mustChurn(b, bin, workload(lib)...)
				return recs
			})
			feedCPU := procCPU(ev.cmd.Process.Pid) - cpu0
			reads := float64(keyReads(b, servers, stats0)) / float64(max(len(recs), 1))
			time.Sleep(time.Second) // the last expiries
			events := ev.stop(b)
			if stopHog != nil {
				stopHog()
			}
			if dir := os.Getenv("REDLOCKCTL_BENCH_LIVE_DUMP"); dir != "" {
				dumpLive(b, dir, lib, recs, events)
			}
			r := judgeLive(recs, events)
			cycles := float64(len(recs)) / float64(secs)
			b.Logf("%s: %.0f cycles/s; acquired %d/%d (%+.2f%%), released %d/%d (%+.2f%%), expired %d/%d reported, %d within 250 ms, %d released reported expired, contended %d; the feed said it handled %d spans late, %.0f ms in all (%.1f%% of the lifecycles; outside them acquired %d/%d (%+.2f%%), contended %d); held_ms error median %.2f ms (p90 %.2f); feed CPU %.2f cores; server CPU per cycle: no feed %.1f µs, bare tracking %.1f µs (%.2fx), feed %.1f µs (%.2fx no feed, %.2fx tracking); feed key reads per cycle %.2f; sources %v",
				lib, cycles, r.acquired, r.wantAcq, pct(r.acquired, r.wantAcq), r.released, r.wantRel, pct(r.released, r.wantRel),
				r.expired, r.wantExp, r.expOnTime, r.releasedAsExpired, r.contended, r.stalls, r.stalledMs, -pct(r.wantAcqOut, r.wantAcq), r.acquiredOut, r.wantAcqOut, pct(r.acquiredOut, r.wantAcqOut), r.contendedOut, r.heldErrMedian, r.heldErrP90,
				feedCPU.Seconds()/float64(secs), base*1e6, floor*1e6, floor/base, feed*1e6, feed/base, feed/floor, reads, sources(events))
			b.ReportMetric(pct(r.acquired, r.wantAcq), lib+"-acq-err-%")
			b.ReportMetric(r.heldErrMedian, lib+"-held-err-ms")
			b.ReportMetric(feed/base, lib+"-cpu-x-nofeed")
			b.ReportMetric(feed/floor, lib+"-cpu-x-tracking")
			b.ReportMetric(feedCPU.Seconds()/float64(secs), lib+"-feed-cores")
			b.ReportMetric(reads, lib+"-reads-per-cycle")
		}
		b.Logf("bare tracking subscriber counted %d invalidations", invals.Load())
	}
}

// sources counts the lifecycle events by source.
func sources(events []liveEvent) map[string]int {
	c := map[string]int{}
	for _, e := range events {
		if e.Resource != "" {
			c[e.Source]++
		}
	}
	return c
}

func pct(got, want int) float64 {
	if want == 0 {
		return 0
	}
	return 100 * float64(got-want) / float64(want)
}

func mustChurn(b *testing.B, bin string, args ...string) []churnRecord {
	recs, err := churn(bin, args...)
	if err != nil {
		b.Fatal(err)
	}
	return recs
}

// serverCPU runs work and returns the masters' CPU (INFO cpu, user + sys, all five) per
// lock cycle it logged.
func serverCPU(b *testing.B, servers []*redistest.Server, work func() []churnRecord) float64 {
	read := func() float64 {
		total := 0.0
		for _, s := range servers {
			v, err := redis.String(s.Do("INFO", "cpu"))
			if err != nil {
				b.Fatal(err)
			}
			for _, line := range strings.Split(v, "\r\n") {
				k, val, _ := strings.Cut(line, ":")
				if k == "used_cpu_sys" || k == "used_cpu_user" {
					f, _ := strconv.ParseFloat(val, 64)
					total += f
				}
			}
		}
		return total
	}
	before := read()
	recs := work()
	return (read() - before) / float64(max(len(recs), 1))
}

// bareTracking subscribes to every master's invalidations with CLIENT TRACKING BCAST
// and only counts them: the floor cost of a live signal.
func bareTracking(b *testing.B, servers []*redistest.Server, n *atomic.Int64) (stop func()) {
	var conns []redis.Conn
	for _, s := range servers {
		sub, err := redis.Dial("tcp", s.Addr)
		if err != nil {
			b.Fatal(err)
		}
		trk, err := redis.Dial("tcp", s.Addr)
		if err != nil {
			b.Fatal(err)
		}
		id, err := redis.Int64(sub.Do("CLIENT", "ID"))
		if err == nil {
			_, err = sub.Do("SUBSCRIBE", "__redis__:invalidate")
		}
		if err == nil {
			_, err = trk.Do("CLIENT", "TRACKING", "on", "REDIRECT", id, "BCAST", "PREFIX", "live:")
		}
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, sub, trk)
		go func() {
			for {
				if _, err := sub.Receive(); err != nil {
					return
				}
				n.Add(1)
			}
		}()
	}
	return func() {
		for _, c := range conns {
			c.Close()
		}
	}
}

// procCPU is a process's CPU time so far (user + system).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	hz := int64(100)
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
			hz = v
		}
	}
	return time.Duration((ut + st) * int64(time.Second) / hz)
}

// liveJudgement compares events with the workload's log.
type liveJudgement struct {
	acquired, wantAcq, released, wantRel, expired, wantExp int
	expOnTime, releasedAsExpired, contended                int
	stalls                                                 int
	stalledMs                                              float64
	// Outside the spans the feed said it handled late (stalled): the workload's
	// acquisitions there, the feed's, and its contended.
	wantAcqOut, acquiredOut, contendedOut int
	heldErrMedian, heldErrP90             float64
}

func judgeLive(recs []churnRecord, events []liveEvent) liveJudgement {
	var r liveJudgement
	released := map[string]bool{}
	expiry := map[string]churnRecord{}
	type span struct{ acq, held float64 }
	truth := map[string][]span{}
	for _, c := range recs {
		switch c.End {
		case "released":
			r.wantRel++
			released[c.Value] = true
		case "expired":
			r.wantExp++
			expiry[c.Value] = c
		default:
			continue
		}
		r.wantAcq++
		truth[c.Key] = append(truth[c.Key], span{float64(c.AcquiredNs) / 1e6, float64(c.EndedNs-c.AcquiredNs) / 1e6})
	}
	type late struct{ from, to int64 }
	var lates []late
	for _, e := range events {
		if e.Event == "stalled" {
			lates = append(lates, late{e.From.UnixNano() - int64(10*time.Millisecond), e.To.UnixNano() + int64(10*time.Millisecond)})
		}
	}
	said := func(ns ...int64) bool {
		for _, l := range lates {
			for _, at := range ns {
				if at >= l.from && at <= l.to {
					return true
				}
			}
		}
		return false
	}
	for _, c := range recs {
		if (c.End == "released" || c.End == "expired") && !said(c.AcquiredNs, c.EndedNs) {
			r.wantAcqOut++
		}
	}
	seen := map[string][]span{}
	for _, e := range events {
		if (e.Event == "acquired" || e.Event == "contended") && !said(e.At.UnixNano()) {
			if e.Event == "acquired" {
				r.acquiredOut++
			} else {
				r.contendedOut++
			}
		}
		switch e.Event {
		case "acquired":
			r.acquired++
		case "contended":
			r.contended++
		case "stalled":
			r.stalls++
			r.stalledMs += float64(e.To.Sub(e.From).Microseconds()) / 1000
		case "released", "expired":
			if e.Event == "released" {
				r.released++
			} else {
				r.expired++
				if released[e.Value] {
					r.releasedAsExpired++
				}
				if c, ok := expiry[e.Value]; ok && float64(e.At.UnixNano()-c.EndedNs)/1e6 <= 250 {
					r.expOnTime++
				}
			}
			if e.HeldMs != nil {
				end := float64(e.At.UnixNano()) / 1e6
				seen[e.Key] = append(seen[e.Key], span{end - *e.HeldMs, *e.HeldMs})
			}
		}
	}
	// Each logged lifecycle against the event whose acquisition is nearest (within 5
	// ms): the error of its held_ms.
	for _, sp := range seen {
		slices.SortFunc(sp, func(a, b span) int { return int(math.Copysign(1, a.acq-b.acq)) })
	}
	var errs []float64
	for key, ts := range truth {
		got := seen[key]
		for _, t := range ts {
			i, _ := slices.BinarySearchFunc(got, t.acq, func(s span, v float64) int {
				switch {
				case s.acq < v:
					return -1
				case s.acq > v:
					return 1
				}
				return 0
			})
			best := math.Inf(1)
			for _, j := range []int{i - 1, i} {
				if j >= 0 && j < len(got) && math.Abs(got[j].acq-t.acq) < 5 {
					best = min(best, math.Abs(got[j].held-t.held))
				}
			}
			if !math.IsInf(best, 1) {
				errs = append(errs, best)
			}
		}
	}
	slices.Sort(errs)
	if len(errs) > 0 {
		r.heldErrMedian = errs[len(errs)/2]
		r.heldErrP90 = errs[len(errs)*9/10]
	}
	return r
}

// patternWorkload is the churn arguments of a pattern of this project's library
// (churn -mode), one key per worker, for secs.
func patternWorkload(mode, addrs, prefix, config string, secs float64) []string {
	args := []string{"-lib", "redlock", "-mode", mode, "-addrs", addrs, "-prefix", prefix, "-duration", fmt.Sprintf("%.1fs", secs)}
	switch mode {
	case "do": // holds longer than the TTL, extended every 100 ms; one in five overruns
		args = append(args, "-workers", "24", "-hold", "400ms", "-ttl", "300ms", "-overrun-every", "5")
	case "reacquire": // holds of 1-20 ms, the next acquisition at once
		args = append(args, "-workers", "24", "-hold", "20ms", "-ttl", "1s")
	case "fenced": // the plain cycle, fenced; one in 500 expires
		args = append(args, "-workers", "24", "-hold", "2ms", "-ttl", "1s", "-overrun-every", "500", "-overrun-ttl", "300ms")
	case "run": // jobs of 300 ms under a 600 ms TTL: run proves its lease, then extends every 200 ms
		args = append(args, "-workers", "8", "-hold", "300ms", "-ttl", "600ms", "-redlockctl", binPath, "-config", config)
	}
	return args
}

// benchPattern measures the feed against one pattern of this project's library
// (patternWorkload) on 5 masters, beside the same workload with no feed and with a
// bare tracking subscriber: its counts against the workload's log, the contended it
// invented (each worker has a key of its own: none happened), the releases it
// reported expired, the events it reported for fence counters, and the servers' CPU
// per lock cycle.
func benchPattern(b *testing.B, mode string) {
	secs := benchLiveSeconds()
	servers := redistest.StartN(b, 5, redistest.Options{})
	// run's node timeout: one a loaded machine does not trip (a job must not be lost).
	cfg := liveConfigLock(b, servers, `node_timeout = "500ms"`, "", "live:*")
	addrs := strings.Join(redistest.Addrs(servers), ",")
	bin := buildChurn(b)
	workload := func() []churnRecord {
		return mustChurn(b, bin, patternWorkload(mode, addrs, "live:", cfg, float64(secs))...)
	}
	for range b.N {
		var invals atomic.Int64
		base := serverCPU(b, servers, workload)
		stop := bareTracking(b, servers, &invals)
		floor := serverCPU(b, servers, workload)
		stop()
		ev := startEvents(b, cfg)
		time.Sleep(500 * time.Millisecond)
		cpu0 := procCPU(ev.cmd.Process.Pid)
		stats0 := commandStats(b, servers)
		var recs []churnRecord
		feed := serverCPU(b, servers, func() []churnRecord {
			recs = workload()
			return recs
		})
		feedCPU := procCPU(ev.cmd.Process.Pid) - cpu0
		reads := float64(keyReads(b, servers, stats0)) / float64(max(len(recs), 1))
		time.Sleep(time.Second) // the last expiries
		events := ev.stop(b)
		r := judgeLive(recs, events)
		ends := countEnds(recs)
		fence := fenceEvents(events)
		b.Logf("%s: %.0f cycles/s, log %v; acquired %d/%d (%+.2f%%), released %d/%d (%+.2f%%), expired %d/%d (%+.2f%%), %d within 250 ms, %d released reported expired, contended %d (invented: no attempt failed on another's lock), fence counter events %d; the feed said it handled %d spans late, %.0f ms in all (%.1f%% of the lifecycles; outside them acquired %d/%d (%+.2f%%), contended %d); held_ms error median %.2f ms (p90 %.2f); feed CPU %.2f cores; server CPU per cycle: no feed %.1f µs, bare tracking %.1f µs (%.2fx), feed %.1f µs (%.2fx no feed, %.2fx tracking); feed key reads per cycle %.2f; bare subscriber counted %d invalidations",
			mode, float64(len(recs))/float64(secs), ends, r.acquired, r.wantAcq, pct(r.acquired, r.wantAcq), r.released, r.wantRel, pct(r.released, r.wantRel),
			r.expired, r.wantExp, pct(r.expired, r.wantExp), r.expOnTime, r.releasedAsExpired, r.contended, fence, r.stalls, r.stalledMs, -pct(r.wantAcqOut, r.wantAcq), r.acquiredOut, r.wantAcqOut, pct(r.acquiredOut, r.wantAcqOut), r.contendedOut,
			r.heldErrMedian, r.heldErrP90, feedCPU.Seconds()/float64(secs), base*1e6, floor*1e6, floor/base, feed*1e6, feed/base, feed/floor, reads, invals.Load())
		b.ReportMetric(pct(r.acquired, r.wantAcq), "acq-err-%")
		b.ReportMetric(pct(r.released, r.wantRel), "rel-err-%")
		b.ReportMetric(pct(r.expired, r.wantExp), "exp-err-%")
		b.ReportMetric(float64(r.contended), "contended")
		b.ReportMetric(float64(r.releasedAsExpired), "released-as-expired")
		b.ReportMetric(float64(fence), "fence-events")
		b.ReportMetric(feed/floor, "cpu-x-tracking")
		b.ReportMetric(feedCPU.Seconds()/float64(secs), "feed-cores")
		b.ReportMetric(reads, "reads-per-cycle")
	}
}

// fenceEvents counts the events of fence counters (keys ending in redlock.FenceSuffix):
// they are no locks.
func fenceEvents(events []liveEvent) int {
	n := 0
	for _, e := range events {
		if strings.HasSuffix(e.Key, redlock.FenceSuffix) || strings.HasSuffix(e.Resource, redlock.FenceSuffix) {
			n++
		}
	}
	return n
}

// dumpLive writes a phase's workload log and events to dir (REDLOCKCTL_BENCH_LIVE_DUMP),
// one JSON object a line, for a look at what the feed got wrong.
func dumpLive(b *testing.B, dir, name string, recs []churnRecord, events []liveEvent) {
	for file, v := range map[string]any{name + "-log.ndjson": recs, name + "-events.ndjson": events} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		switch v := v.(type) {
		case []churnRecord:
			for _, r := range v {
				enc.Encode(r)
			}
		case []liveEvent:
			for _, e := range v {
				enc.Encode(e)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, file), buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// hog starts a busy loop per core (each a shell of its own, at the feed's priority)
// and returns what stops them.
func hog(b *testing.B) func() {
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		cmds = nil
	}
	b.Cleanup(stop)
	for range runtime.NumCPU() {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	return stop
}
