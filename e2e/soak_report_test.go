package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redlockctl/redlockctl/admin"
)

// soakReport is the soak's JSON report; soakTable renders its README table.
type soakReport struct {
	Duration     string           `json:"duration"`
	Started      time.Time        `json:"started"`
	WarmUpS      float64          `json:"warm_up_s"`
	PollInterval string           `json:"poll_interval"`
	HealthEvery  int              `json:"health_every"`
	Faults       []*faultRun      `json:"faults"`
	Processes    []procFigures    `json:"processes"`
	Scrape       scrapeFigures    `json:"scrape"`
	Lifecycles   lifecycleFigures `json:"lifecycles"`
	Console      consoleFigures   `json:"console"`
	Audit        auditFigures     `json:"audit"`
	// Mismatches are the rows serve's reconciliations found the live feed had got
	// wrong, per master: during a fault on it (or within its bound after), and
	// outside any (a failure).
	Mismatches map[string]mismatchFigures `json:"reconcile_mismatches"`
	// ConsoleMismatches are the console's, from the lines it prints when it exits.
	ConsoleMismatches map[string]mismatchFigures `json:"console_reconcile_mismatches,omitempty"`
	StderrLines       map[string]int             `json:"stderr_lines"` // explained lines per process
	Unexplained       []string                   `json:"unexplained_stderr"`
	Failures          []string                   `json:"failures"`
	Passed            bool                       `json:"passed"`
	GoroutinesVia     string                     `json:"goroutines_via"`
}

// procFigures is one process's memory and goroutines after the warm-up. Windows are
// a tenth of the run after the warm-up (10 s at least); each window's median must stay
// within ±10% of the first's. Goroutines and the memory the Go runtime holds (its Sys
// less what it returned) are judged from the warm-up on; RSS from a later one (a third
// of the run, 40 s at least): RSS climbs for minutes towards what the runtime holds,
// flat, as the allocator first touches pages it already has (seen at 25.8 MB held from
// the start while the console's RssAnon rose 7 KiB/s), and a leak shows in what it holds.
type procFigures struct {
	Process         string  `json:"process"`
	Samples         int     `json:"samples"`
	RSSWarmUpS      float64 `json:"rss_warm_up_s"`
	RetainedWarmUpS float64 `json:"retained_warm_up_s"`
	RetainedBaseMiB float64 `json:"retained_baseline_mib"`
	RetainedMaxMiB  float64 `json:"retained_max_mib"`
	RetainedDrift   float64 `json:"retained_window_drift_pct"`
	RSSBaseMiB      float64 `json:"rss_baseline_mib"`
	RSSMinMiB       float64 `json:"rss_min_mib"`
	RSSMaxMiB       float64 `json:"rss_max_mib"`
	RSSDriftPct     float64 `json:"rss_window_drift_pct"` // largest window median off the baseline
	GoroutinesBase  float64 `json:"goroutines_baseline"`
	GoroutinesMin   int64   `json:"goroutines_min"`
	GoroutinesMax   int64   `json:"goroutines_max"`
	GoroutinesDrift float64 `json:"goroutines_window_drift_pct"`
	ThreadsMax      int64   `json:"threads_max"`
	AnonBaseMiB     float64 `json:"rss_anon_baseline_mib"` // RssAnon: not judged
	AnonDriftPct    float64 `json:"rss_anon_window_drift_pct"`
	HeapLiveBaseMiB float64 `json:"heap_live_baseline_mib,omitempty"` // events and the console
	HeapLiveDrift   float64 `json:"heap_live_window_drift_pct,omitempty"`
}

type scrapeFigures struct {
	Count      int     `json:"count"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	Errors     int     `json:"errors"`
	HealthzNon int     `json:"healthz_not_200"`
	FalseDown  int     `json:"false_down"` // scrapes with master_up 0 for a master that answered
}

type lifecycleFigures struct {
	Logged          int            `json:"logged"` // released + expired, both libraries
	PerLib          map[string]int `json:"per_library"`
	InGaps          int            `json:"excluded_overlapping_a_gap"`
	Matched         int            `json:"matched_once"`
	Missed          int            `json:"missed"`    // no acquired or no end event
	Doubled         int            `json:"doubled"`   // more than one acquired or end event
	WrongEnd        int            `json:"wrong_end"` // an end other than the one logged
	ReleasedExpired int            `json:"released_reported_expired"`
	Overruns        int            `json:"overruns"`
	OverrunsSeen    int            `json:"overruns_reported_expired"`
	Invented        int            `json:"invented"` // acquired events of values no workload logged, outside gaps
	Gaps            int            `json:"gap_events"`
	Events          map[string]int `json:"events"`
	Failed          int            `json:"failed_attempts"`
	FailedSeen      int            `json:"failed_attempts_reported_acquired"` // held a quorum although the library gave up
	ReleaseErrors   int            `json:"release_errors"`
	Examples        []string       `json:"examples,omitempty"`
	OverrunsInGaps  int            `json:"overruns_in_gaps"` // excluded with their lifecycles
	// Contended events are not judged (a master's partial view in a fault looks like a
	// failed attempt); each is put down to what explains it (see contendedBy).
	Contended            map[string]int `json:"contended_by_cause"`
	ContendedUnexplained []string       `json:"contended_unexplained,omitempty"`
	Dump                 string         `json:"events_and_logs"` // every event and logged lifecycle, one JSON object a line
	// Matched lifecycles whose acquired event came more than lateAcquired after the
	// workload's acquisition: not judged (a starved feed process is late too).
	Late         int      `json:"matched_acquired_late"`
	LateExamples []string `json:"matched_acquired_late_examples,omitempty"`
}

type consoleFigures struct {
	Captures    int `json:"captures"`
	FalseDown   int `json:"false_down"`
	DroppedRows int `json:"dropped_rows"`
	DownShown   int `json:"down_shown_during_faults"`
	// DownKinds counts, per fault, the error kinds the console gave its master while
	// down (its error_kind), e.g. {"sigstop-5s": {"timeout": 4}}.
	DownKinds    map[string]map[string]int `json:"down_kinds"`
	FirstProblem string                    `json:"first_problem,omitempty"`
	Screens      []string                  `json:"screens,omitempty"`
}

type auditFigures struct {
	Actions int `json:"actions"`
	Failed  int `json:"failed_actions"`
	Lines   int `json:"lines"`
	Torn    int `json:"torn_lines"`
	Pairs   int `json:"intent_outcome_pairs"`
}

// finish stops the workloads and the processes, judges what was sampled, writes the
// report and fails the test with whatever did not hold.
func (s *soak) finish() {
	t := s.t
	var work []workResult
	for range 2 {
		select {
		case r := <-s.work:
			work = append(work, r)
		case <-time.After(2 * time.Minute):
			t.Fatal("the workloads did not end")
		}
	}
	time.Sleep(1500 * time.Millisecond) // the last overruns expire
	events := s.ev.stop(t)
	s.serve.Process.Signal(syscall.SIGTERM)
	if err := s.serve.Wait(); err != nil {
		s.fail("serve after SIGTERM: %v", err)
	}
	s.tm.literal(t, "q")
	s.tm.waitFor(t, "exit status 0")

	r := &soakReport{Duration: s.d.String(), Started: s.begin, WarmUpS: s.warm.Sub(s.begin).Seconds(),
		PollInterval: soakPoll.String(), HealthEvery: soakHealthEvery, Faults: s.faults,
		GoroutinesVia: "serve: go_goroutines on /metrics; events and the console: $REDLOCKCTL_DEBUG_ADDR"}
	s.judgeFaults(events)
	s.judgeServeDown(r)
	s.judgeMismatches(r)
	s.judgeProcs(r)
	s.judgeScrapes(r)
	s.judgeConsole(r)
	s.judgeLifecycles(r, work, events)
	s.judgeAudit(r)
	s.judgeStderr(r, work)
	r.Failures = s.failures
	r.Passed = len(r.Failures) == 0
	s.writeReport(r)
	for _, f := range r.Failures {
		t.Error(f)
	}
}

// judgeFaults finds, for each fault, the first scrape that shows it and the first after
// its end that shows it gone, within its slot.
func (s *soak) judgeFaults(events []liveEvent) {
	for i, f := range s.faults {
		limit := f.Start.Add(soakSlot + 30*time.Second)
		if i+1 < len(s.faults) {
			limit = s.faults[i+1].Start
		}
		var before *scrapeSample
		f.VisibleAfterMs, f.ClearedAfterMs = -1, -1
		for _, sc := range s.scrapes {
			// A scrape shows serve as it was when it answered: one sent before the
			// fault and answered after it began is not the state before it.
			answered := sc.At.Add(sc.Latency)
			if answered.Before(f.Start) {
				before = sc
				continue
			}
			if sc.At.After(limit) {
				break
			}
			if f.VisibleAfterMs < 0 && f.f.visible(before, sc) {
				from := f.Start
				if f.f.happensAtEnd {
					from = f.End // (a failover seen before hold returned: 0)
				}
				f.VisibleAfterMs = max(0, ms(answered.Sub(from)))
			}
			if f.ClearedAfterMs < 0 && !sc.At.Before(f.End) && f.f.cleared(sc) {
				f.ClearedAfterMs = ms(sc.At.Sub(f.End))
			}
		}
		for _, e := range events {
			if e.Event == "gap" && e.Master == f.Master && !e.At.Before(f.Start) && e.At.Before(limit) {
				f.FeedGap = true
			}
		}
		b := f.BoundMs
		if f.VisibleAfterMs < 0 || f.VisibleAfterMs > b {
			s.fail("fault %s on %s at %s: visible (%s) after %.0f ms, want within %.0f ms", f.Fault, f.Master, f.Start.Format("15:04:05"), f.VisibleBy, f.VisibleAfterMs, b)
		}
		if f.ClearedAfterMs < 0 || f.ClearedAfterMs > b {
			s.fail("fault %s on %s at %s: cleared (%s) %.0f ms after its end, want within %.0f ms", f.Fault, f.Master, f.Start.Format("15:04:05"), f.ClearedBy, f.ClearedAfterMs, b)
		}
	}
	seen := map[string]bool{}
	for _, f := range s.faults {
		seen[f.Fault] = true
	}
	for _, f := range soakFaults(s) {
		if !seen[f.name] {
			s.fail("fault %s never ran: the run is too short for the schedule", f.name)
		}
	}
}

// downAllowed says whether master may show as down at at: under a fault that silences
// it, or within that fault's bound after its end.
func (s *soak) downAllowed(at time.Time, master string) bool {
	return s.during(at, master, func(f *soakFault) bool { return f.downOK })
}

// during says whether at falls in a fault on master that ok accepts, or within the
// fault's bound after it ended.
func (s *soak) during(at time.Time, master string, ok func(*soakFault) bool) bool {
	for _, f := range s.faults {
		if f.Master == master && ok(f.f) && !at.Before(f.Start) && (f.End.IsZero() || at.Before(f.End.Add(f.f.bound()))) {
			return true
		}
	}
	return false
}

// faultAt returns the fault on master that at falls in (or within its bound after).
func (s *soak) faultAt(at time.Time, master string) *faultRun {
	for _, f := range s.faults {
		if f.Master == master && !at.Before(f.Start) && (f.End.IsZero() || at.Before(f.End.Add(f.f.bound()))) {
			return f
		}
	}
	return nil
}

type mismatchFigures struct {
	InFaults int `json:"in_faults"`
	Outside  int `json:"outside_faults"`
}

// judgeMismatches: serve's reconciliations find the feed wrong only where a fault on
// the master cut it (a change in the gap, read by the whole read after it).
func (s *soak) judgeMismatches(r *soakReport) {
	r.Mismatches = map[string]mismatchFigures{}
	var before *scrapeSample
	first := ""
	for _, sc := range s.scrapes {
		if sc.Err != "" {
			continue
		}
		for i := 1; i <= 5 && before != nil; i++ {
			m := fmt.Sprintf("m%d", i)
			n := int(sc.sum("redlockctl_reconcile_mismatches_total", "master", m) - before.sum("redlockctl_reconcile_mismatches_total", "master", m))
			if n <= 0 {
				continue
			}
			f := r.Mismatches[m]
			if s.faultAt(sc.At, m) != nil || s.faultAt(before.At, m) != nil {
				f.InFaults += n
			} else {
				f.Outside += n
				if first == "" {
					first = sc.At.Format("15:04:05.000") + " " + m
				}
			}
			r.Mismatches[m] = f
		}
		before = sc
	}
	// The console's, from the lines it printed when it exited.
	con, _ := readFileString(s.conErr)
	for _, line := range strings.Split(con, "\n") {
		m := consoleMismatch.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		clock, err := time.ParseInLocation("15:04:05.000", m[2], time.Local)
		if err != nil {
			s.fail("the console's mismatch line %q: %v", line, err)
			continue
		}
		y, mo, d := s.begin.Date()
		at := time.Date(y, mo, d, clock.Hour(), clock.Minute(), clock.Second(), clock.Nanosecond(), time.Local)
		if at.Before(s.begin) {
			at = at.AddDate(0, 0, 1) // past midnight
		}
		f := r.ConsoleMismatches[m[1]]
		if s.faultAt(at, m[1]) != nil {
			f.InFaults++
		} else {
			f.Outside++
			s.fail("the console's reconciliation found the live feed wrong outside any fault: %q", line)
		}
		if r.ConsoleMismatches == nil {
			r.ConsoleMismatches = map[string]mismatchFigures{}
		}
		r.ConsoleMismatches[m[1]] = f
	}
	if first != "" {
		var why []string // serve's lines, which name the keys
		for _, line := range strings.Split(s.serveLog.text(), "\n") {
			if strings.Contains(line, "redlockctl serve: reconcile: ") && len(why) < 5 {
				why = append(why, line)
			}
		}
		s.fail("serve's reconciliations found the live feed wrong outside any fault (first %s): %q", first, why)
	}
}

// judgeServeDown: serve never says master_up 0 for a master that answered.
func (s *soak) judgeServeDown(r *soakReport) {
	first, firstMaster := "", ""
	for _, sc := range s.scrapes {
		if sc.At.Before(s.warm) {
			continue
		}
		for i := 1; i <= 5; i++ {
			m := fmt.Sprintf("m%d", i)
			if sc.is(0, "redlockctl_master_up", "master", m) && !s.downAllowed(sc.At, m) {
				r.Scrape.FalseDown++
				if first == "" {
					first, firstMaster = sc.At.Format("15:04:05.000")+" "+m, m
				}
			}
		}
	}
	if r.Scrape.FalseDown > 0 {
		var why []string // serve's own lines on that master, which say why
		for _, line := range strings.Split(s.serveLog.text(), "\n") {
			if strings.HasPrefix(line, "redlockctl serve: master "+firstMaster+" ") {
				why = append(why, line)
			}
		}
		s.fail("serve: %d scrapes said master_up 0 for a master that answered; first %s; serve said %q", r.Scrape.FalseDown, first, why)
	}
}

// judgeProcs computes each process's figures and holds its windows to ±10%.
func (s *soak) judgeProcs(r *soakReport) {
	window := max(10*time.Second, (s.d-s.warm.Sub(s.begin))/10)
	for _, name := range []string{"serve", "events", "console"} {
		var after []procSample
		for _, p := range s.procs[name] {
			if !p.At.Before(s.warm) {
				after = append(after, p)
			}
		}
		if len(after) < 10 {
			s.fail("%s: %d samples after the warm-up: too few to judge", name, len(after))
			continue
		}
		f := procFigures{Process: name, Samples: len(after), GoroutinesMin: math.MaxInt64}
		f.RSSMinMiB = math.MaxFloat64
		for _, p := range after {
			rss := float64(p.RSSKiB) / 1024
			f.RSSMinMiB, f.RSSMaxMiB = math.Min(f.RSSMinMiB, rss), math.Max(f.RSSMaxMiB, rss)
			f.GoroutinesMin, f.GoroutinesMax = min(f.GoroutinesMin, p.Goroutines), max(f.GoroutinesMax, p.Goroutines)
			f.ThreadsMax = max(f.ThreadsMax, p.Threads)
		}
		// RSS climbs for minutes towards what the runtime already holds: it is judged
		// from a third of the run. The runtime's own memory settles within tens of
		// seconds (the heap's goal following the tracker's keys, as the workloads
		// reach them all): from the warm-up, or 40 s in a short run, where 20 s is
		// too early (the heap's goal still moving, +11.9% once).
		var late, settled []procSample
		rssWarm := s.begin.Add(max(40*time.Second, s.d/3))
		retWarm := s.begin.Add(max(40*time.Second, s.warm.Sub(s.begin)))
		for _, p := range after {
			if !p.At.Before(rssWarm) {
				late = append(late, p)
			}
			if !p.At.Before(retWarm) {
				settled = append(settled, p)
			}
			f.RetainedMaxMiB = math.Max(f.RetainedMaxMiB, float64(p.RetainedKiB)/1024)
		}
		if len(late) < 10 {
			s.fail("%s: %d samples after RSS's warm-up: too few to judge", name, len(late))
			continue
		}
		f.RSSWarmUpS, f.RetainedWarmUpS = rssWarm.Sub(s.begin).Seconds(), retWarm.Sub(s.begin).Seconds()
		rssW := windowMedians(late, window, func(p procSample) float64 { return float64(p.RSSKiB) / 1024 })
		gW := windowMedians(after, window, func(p procSample) float64 { return float64(p.Goroutines) })
		rW := windowMedians(settled, window, func(p procSample) float64 { return float64(p.RetainedKiB) / 1024 })
		f.RSSBaseMiB, f.RSSDriftPct = rssW[0], drift(rssW)
		f.GoroutinesBase, f.GoroutinesDrift = gW[0], drift(gW)
		f.RetainedBaseMiB, f.RetainedDrift = rW[0], drift(rW)
		aW := windowMedians(after, window, func(p procSample) float64 { return float64(p.AnonKiB) / 1024 })
		f.AnonBaseMiB, f.AnonDriftPct = aW[0], drift(aW)
		if name != "serve" {
			hW := windowMedians(after, window, func(p procSample) float64 { return float64(p.HeapLiveKiB) / 1024 })
			f.HeapLiveBaseMiB, f.HeapLiveDrift = hW[0], drift(hW)
		}
		if f.GoroutinesMin < 0 {
			s.fail("%s: goroutines were not read in every sample", name)
		}
		// RSS is the runtime's anonymous pages plus file pages. The anonymous part
		// climbs, for as long as a run lasts, towards what the runtime already held
		// (its allocator touching held pages for the first time: serve's RssAnon went
		// 11.6 -> 14 MiB in 30 minutes while it held 19-21 MiB, with a steady heap), so
		// RSS alone drifts past 10% with no leak. A drift is a failure unless every
		// window's RssAnon stays within what the runtime held at its baseline (+10%)
		// and the file pages (RSS less RssAnon) keep within ±10%; a leak of the
		// runtime's own memory fails its own check below.
		if math.Abs(f.RSSDriftPct) > 10 {
			anonW := windowMedians(late, window, func(p procSample) float64 { return float64(p.AnonKiB) / 1024 })
			fileW := make([]float64, len(rssW)) // the same samples and windows as anonW
			held := f.RetainedBaseMiB > 0
			for i, anon := range anonW {
				fileW[i] = rssW[i] - anon
				held = held && anon <= f.RetainedBaseMiB*1.1
			}
			if !held || math.Abs(drift(fileW)) > 10 {
				s.fail("%s: RSS window median drifted %.1f%% from %.1f MiB (want within ±10%%, or RssAnon within the runtime's %.1f MiB and file pages within ±10%%): RSS %v, RssAnon %v",
					name, f.RSSDriftPct, f.RSSBaseMiB, f.RetainedBaseMiB, rssW, anonW)
			}
		}
		if f.RetainedBaseMiB <= 0 || math.Abs(f.RetainedDrift) > 10 {
			s.fail("%s: memory the runtime holds: window median drifted %.1f%% from %.1f MiB (want within ±10%%): %v", name, f.RetainedDrift, f.RetainedBaseMiB, rW)
		}
		if math.Abs(f.GoroutinesDrift) > 10 {
			s.fail("%s: goroutines window median drifted %.1f%% from %.0f (want within ±10%%): %v", name, f.GoroutinesDrift, f.GoroutinesBase, gW)
		}
		r.Processes = append(r.Processes, f)
	}
}

// windowMedians returns the median of v over consecutive windows of samples.
func windowMedians(ps []procSample, window time.Duration, v func(procSample) float64) []float64 {
	var out, cur []float64
	start := ps[0].At
	for _, p := range ps {
		if p.At.Sub(start) >= window && len(cur) > 0 {
			out = append(out, median(cur))
			cur, start = nil, p.At
		}
		cur = append(cur, v(p))
	}
	if len(cur) >= 5 || len(out) == 0 {
		out = append(out, median(cur))
	}
	return out
}

// drift is the window median farthest from the first, in percent of the first.
func drift(w []float64) float64 {
	var d float64
	for _, x := range w[1:] {
		if p := 100 * (x - w[0]) / w[0]; math.Abs(p) > math.Abs(d) {
			d = p
		}
	}
	return d
}

// judgeScrapes: /metrics p99 within 100 ms, /healthz always 200.
func (s *soak) judgeScrapes(r *soakReport) {
	var lat []float64
	for _, sc := range s.scrapes {
		if sc.Err != "" {
			r.Scrape.Errors++
			continue
		}
		lat = append(lat, ms(sc.Latency))
		if sc.Health != 200 {
			r.Scrape.HealthzNon++
		}
	}
	r.Scrape.Count = len(s.scrapes)
	if len(lat) == 0 {
		s.fail("no scrape of /metrics succeeded")
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	r.Scrape.P50Ms, r.Scrape.P99Ms, r.Scrape.MaxMs = pct(0.5), pct(0.99), lat[len(lat)-1]
	if r.Scrape.P99Ms > 100 {
		s.fail("scrape latency p99 %.1f ms, want <= 100 ms", r.Scrape.P99Ms)
	}
	if r.Scrape.Errors > 0 || r.Scrape.HealthzNon > 0 {
		s.fail("%d scrapes of /metrics failed and /healthz answered other than 200 %d times", r.Scrape.Errors, r.Scrape.HealthzNon)
	}
}

// judgeConsole: a master shown down must have been under a fault that silences it (or
// within the bound after); solo:mN must show unless its master lost it to a fault.
func (s *soak) judgeConsole(r *soakReport) {
	within := s.during
	note := func(c screenCheck, what string) {
		if r.Console.FirstProblem == "" {
			r.Console.FirstProblem = c.At.Format("15:04:05.000") + " " + what
		}
		if len(r.Console.Screens) < 3 {
			r.Console.Screens = append(r.Console.Screens, c.Screen)
		}
	}
	r.Console.DownKinds = map[string]map[string]int{}
	for _, c := range s.screens {
		if c.At.Before(s.warm) {
			continue
		}
		r.Console.Captures++
		for i, m := range c.Down {
			if f := s.faultAt(c.At, m); f != nil && f.f.downOK {
				r.Console.DownShown++
				if r.Console.DownKinds[f.Fault] == nil {
					r.Console.DownKinds[f.Fault] = map[string]int{}
				}
				r.Console.DownKinds[f.Fault][cmp.Or(c.Kinds[i], "?")]++
				continue
			}
			r.Console.FalseDown++
			note(c, m+" shown down while it answered")
		}
		for name, shown := range c.Solo {
			m := strings.TrimPrefix(name, "solo:")
			if !shown && !within(c.At, m, func(f *soakFault) bool { return f.dropsSolo }) {
				r.Console.DroppedRows++
				note(c, name+" missing (held by "+m+" only)")
			}
		}
	}
	if r.Console.FalseDown > 0 || r.Console.DroppedRows > 0 {
		s.fail("console: %d captures showed a master down that answered, %d missed a row held by one master; first: %s",
			r.Console.FalseDown, r.Console.DroppedRows, r.Console.FirstProblem)
	}
}

// judgeAudit: every line parses, one intent and one outcome per action that was sent.
func (s *soak) judgeAudit(r *soakReport) {
	f, err := os.Open(s.audit)
	if err != nil {
		s.fail("audit log: %v", err)
		return
	}
	defer f.Close()
	phases := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		r.Audit.Lines++
		var a admin.ActionResult
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil || a.Phase == "" || a.Action == "" {
			r.Audit.Torn++
			continue
		}
		k := a.Action + " " + a.Resource
		phases[k] = append(phases[k], a.Phase)
	}
	for _, a := range s.admin {
		r.Audit.Actions++
		if a.Exit != 0 {
			r.Audit.Failed++
		}
		k := a.Action + " " + a.Resource
		if got := phases[k]; slices.Equal(got, []string{admin.PhaseIntent, admin.PhaseOutcome}) {
			r.Audit.Pairs++
		} else {
			s.fail("audit log: %s (exit %d): phases %v, want intent then outcome; stderr: %s", k, a.Exit, got, a.Stderr)
		}
		delete(phases, k)
	}
	for k, p := range phases {
		s.fail("audit log: %s %v: no such action was run", k, p)
	}
	if r.Audit.Torn > 0 {
		s.fail("audit log: %d of %d lines torn or unparsable", r.Audit.Torn, r.Audit.Lines)
	}
	if r.Audit.Actions < 3 {
		s.fail("only %d admin actions ran: the audit check proves nothing", r.Audit.Actions)
	}
}

// soakReportPath is $SOAK_REPORT, or redlockctl-soak-report.json in the temporary
// directory.
func soakReportPath() string {
	if p := os.Getenv("SOAK_REPORT"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "redlockctl-soak-report.json")
}

// writeReport writes the JSON report and its Markdown table, and logs the table.
func (s *soak) writeReport(r *soakReport) {
	path := soakReportPath()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		s.t.Fatal(err)
	}
	table := soakTable(r)
	md := strings.TrimSuffix(path, filepath.Ext(path)) + ".md"
	if err := os.WriteFile(path, b, 0o644); err != nil {
		s.t.Errorf("report: %v", err)
	}
	if err := os.WriteFile(md, []byte(table), 0o644); err != nil {
		s.t.Errorf("report: %v", err)
	}
	s.t.Logf("soak report: %s (table: %s)\n%s", path, md, table)
}

// soakTable renders the README's soak table from a report.
func soakTable(r *soakReport) string {
	var b strings.Builder
	verdict := map[bool]string{true: "passed", false: "FAILED"}[r.Passed]
	fmt.Fprintf(&b, "Soak of %s (%s, warm-up %.0f s, poll %s, health_every %d): %s\n\n",
		r.Duration, r.Started.UTC().Format("2006-01-02"), r.WarmUpS, r.PollInterval, r.HealthEvery, verdict)
	b.WriteString("| Figure | Value |\n|---|---|\n")
	for _, p := range r.Processes {
		fmt.Fprintf(&b, "| %s RSS (MiB): baseline after %.0f s, min–max, window drift | %.1f, %.1f–%.1f, %+.1f%% |\n", p.Process, p.RSSWarmUpS, p.RSSBaseMiB, p.RSSMinMiB, p.RSSMaxMiB, p.RSSDriftPct)
		fmt.Fprintf(&b, "| %s memory the Go runtime holds (MiB): baseline after %.0f s, max, window drift | %.1f, %.1f, %+.1f%% |\n", p.Process, p.RetainedWarmUpS, p.RetainedBaseMiB, p.RetainedMaxMiB, p.RetainedDrift)
		fmt.Fprintf(&b, "| %s goroutines: baseline, min–max, window drift | %.0f, %d–%d, %+.1f%% |\n", p.Process, p.GoroutinesBase, p.GoroutinesMin, p.GoroutinesMax, p.GoroutinesDrift)
		fmt.Fprintf(&b, "| %s RssAnon (MiB, not judged): baseline, window drift | %.1f, %+.1f%% |\n", p.Process, p.AnonBaseMiB, p.AnonDriftPct)
		if p.HeapLiveBaseMiB > 0 {
			fmt.Fprintf(&b, "| %s live heap (MiB, not judged): baseline, window drift | %.1f, %+.1f%% |\n", p.Process, p.HeapLiveBaseMiB, p.HeapLiveDrift)
		}
	}
	fmt.Fprintf(&b, "| /metrics scrapes: count, p50, p99, max | %d, %.1f ms, %.1f ms, %.1f ms |\n", r.Scrape.Count, r.Scrape.P50Ms, r.Scrape.P99Ms, r.Scrape.MaxMs)
	fmt.Fprintf(&b, "| /healthz not 200, scrape errors, master_up 0 for a master that answered | %d, %d, %d |\n", r.Scrape.HealthzNon, r.Scrape.Errors, r.Scrape.FalseDown)
	type agg struct {
		n             int
		bound         float64
		visMax, clMax float64
		gaps          int
	}
	var order []string
	per := map[string]*agg{}
	for _, f := range r.Faults {
		a := per[f.Fault]
		if a == nil {
			a = &agg{}
			per[f.Fault] = a
			order = append(order, f.Fault+" ("+f.Master+")")
		}
		a.n++
		a.bound = f.BoundMs
		a.visMax, a.clMax = math.Max(a.visMax, f.VisibleAfterMs), math.Max(a.clMax, f.ClearedAfterMs)
		if f.FeedGap {
			a.gaps++
		}
	}
	for _, name := range order {
		a := per[strings.Fields(name)[0]]
		fmt.Fprintf(&b, "| fault %s ×%d: visible, cleared (worst; bound), feed gaps | %.1f s, %.1f s (%.1f s), %d |\n", name, a.n, a.visMax/1000, a.clMax/1000, a.bound/1000, a.gaps)
	}
	l := r.Lifecycles
	fmt.Fprintf(&b, "| lifecycles logged (redsync, redlock) | %d (%d, %d) |\n", l.Logged, l.PerLib["redsync"], l.PerLib["redlock"])
	fmt.Fprintf(&b, "| matched once, excluded by a gap, missed, doubled, wrong end | %d, %d, %d, %d, %d |\n", l.Matched, l.InGaps, l.Missed, l.Doubled, l.WrongEnd)
	fmt.Fprintf(&b, "| overruns reported expired (in a gap, not judged); released reported expired; invented | %d/%d (%d); %d; %d |\n", l.OverrunsSeen, l.Overruns, l.OverrunsInGaps, l.ReleasedExpired, l.Invented)
	fmt.Fprintf(&b, "| failed attempts; of them reported acquired (held a quorum until they expired) | %d; %d |\n", l.Failed, l.FailedSeen)
	fmt.Fprintf(&b, "| `contended` (not judged), by what explains it | %d: %s |\n", l.Events["contended"], causes(l.Contended))
	fmt.Fprintf(&b, "| matched lifecycles whose `acquired` came over %v after the workload's (not judged) | %d |\n", lateAcquired, l.Late)
	fmt.Fprintf(&b, "| console captures: false down, dropped rows | %d: %d, %d |\n", r.Console.Captures, r.Console.FalseDown, r.Console.DroppedRows)
	var kinds []string
	for _, name := range order {
		f := strings.Fields(name)[0]
		var ks []string
		for k, n := range r.Console.DownKinds[f] {
			ks = append(ks, fmt.Sprintf("%s ×%d", k, n))
		}
		if len(ks) > 0 {
			slices.Sort(ks)
			kinds = append(kinds, f+": "+strings.Join(ks, ", "))
		}
	}
	fmt.Fprintf(&b, "| console: a master down, by fault and the error kind shown | %s |\n", cmp.Or(strings.Join(kinds, "; "), "none"))
	fmt.Fprintf(&b, "| audit: actions, lines, intent+outcome pairs, torn | %d, %d, %d, %d |\n", r.Audit.Actions, r.Audit.Lines, r.Audit.Pairs, r.Audit.Torn)
	mismatches := func(by map[string]mismatchFigures) string {
		var mm []string
		for i := 1; i <= 5; i++ {
			if f, ok := by[fmt.Sprintf("m%d", i)]; ok {
				mm = append(mm, fmt.Sprintf("m%d %d in faults, %d outside", i, f.InFaults, f.Outside))
			}
		}
		return cmp.Or(strings.Join(mm, "; "), "none")
	}
	fmt.Fprintf(&b, "| serve's reconciliation mismatches (rows the feed got wrong, fixed) | %s |\n", mismatches(r.Mismatches))
	fmt.Fprintf(&b, "| the console's reconciliation mismatches | %s |\n", mismatches(r.ConsoleMismatches))
	fmt.Fprintf(&b, "| stderr lines unexplained | %d |\n", len(r.Unexplained))
	return b.String()
}
