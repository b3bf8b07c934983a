package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// window is a stretch of time, as a gap of one master's feed.
type window struct{ from, to time.Time }

// gapWindows returns the feed's gaps: from a gap's start to the master's next resync
// (or the gap's own end, if later); and the spans the feed reported it handled late
// (stalled: it waited for a core).
func gapWindows(events []liveEvent) []window {
	var out []window
	for i, e := range events {
		if e.Event == "stalled" {
			out = append(out, window{e.From, e.To}) // the feed said it handled this span late
			continue
		}
		if e.Event != "gap" {
			continue
		}
		w := window{e.At, e.At}
		if !e.From.IsZero() && e.From.Before(w.from) {
			w.from = e.From
		}
		if e.To.After(w.to) {
			w.to = e.To
		}
		for _, f := range events[i+1:] {
			if f.Event == "resync" && f.Master == e.Master {
				if f.At.After(w.to) {
					w.to = f.At
				}
				break
			}
		}
		out = append(out, w)
	}
	return out
}

func overlaps(ws []window, from, to time.Time) bool {
	for _, w := range ws {
		if !to.Before(w.from) && !from.After(w.to) {
			return true
		}
	}
	return false
}

// judgeLifecycles holds the feed to the workloads' own logs: every lifecycle that
// overlaps no gap is one acquired and one end event of the kind logged; no released
// lock is reported expired; every overrun is reported expired; nothing is invented.
//
// A lock held less than the feed's read delay is reported without its value (the feed
// infers it from the invalidations alone), so events are matched to attempts by key
// and time: each worker has a key of its own and its attempts follow one another
// (acquire, hold, release, pause; an overrun or a failed attempt waits until it
// expired), so an attempt's events lie between its start and the next one's. An event
// that carries a value must carry the attempt's. A failed attempt may have held a
// quorum for a while (redsync gives up on an acquisition that took longer than its
// TTL, and leaves it to expire): the feed may report it as a lifecycle or as
// contended, or not at all; the report counts those it reported.
func (s *soak) judgeLifecycles(r *soakReport, work []workResult, events []liveEvent) {
	l := &r.Lifecycles
	l.PerLib, l.Events, l.Dump = map[string]int{}, countKinds(events), s.dumpLifecycles(work, events)
	gaps := gapWindows(events)
	l.Gaps = len(gaps)
	byKey := map[string][]liveEvent{}
	for _, e := range events {
		switch e.Event {
		case "acquired", "released", "expired", "force-released", "evicted":
			byKey[e.Key] = append(byKey[e.Key], e)
		}
	}
	example := func(format string, args ...any) {
		if len(l.Examples) < 10 {
			l.Examples = append(l.Examples, fmt.Sprintf(format, args...))
		}
	}
	recsByKey := map[string][]churnRecord{}
	for _, w := range work {
		if w.err != nil {
			s.fail("workload %s: %v\n%s", w.lib, w.err, w.stderr)
			continue
		}
		l.ReleaseErrors += strings.Count(w.stderr, "churn: release:")
		for _, rec := range w.recs {
			if rec.End == "failed" {
				l.Failed++
			} else {
				l.Logged++
				l.PerLib[w.lib]++
			}
			recsByKey[rec.Key] = append(recsByKey[rec.Key], rec)
		}
	}
	for key, recs := range recsByKey {
		slices.SortFunc(recs, func(a, b churnRecord) int { return cmp.Compare(a.StartedNs, b.StartedNs) })
		used := make([]bool, len(byKey[key]))
		for i, rec := range recs {
			hi := int64(math.MaxInt64)
			if i+1 < len(recs) {
				hi = recs[i+1].StartedNs
			}
			var nAcq int
			var acqAt time.Time
			var ends []liveEvent
			for j, e := range byKey[key] {
				if at := e.At.UnixNano(); at < rec.StartedNs || at >= hi {
					continue
				}
				used[j] = true
				if e.Event == "acquired" {
					nAcq++
					acqAt = e.At
				} else {
					ends = append(ends, e)
				}
				if e.Value != "" && rec.Value != "" && e.Value != rec.Value {
					ends = append(ends, liveEvent{Event: "value " + e.Value})
				}
			}
			if rec.End == "failed" {
				if nAcq > 0 {
					l.FailedSeen++
				}
				if nAcq > 1 || len(ends) > 1 {
					l.Doubled++
					example("doubled: failed attempt %s %q at %s: %d acquired, ends %v", rec.Key, rec.Value, time.Unix(0, rec.StartedNs).Format("15:04:05.000"), nAcq, ends)
				}
				continue
			}
			s.judgeOne(l, rec, gaps, nAcq, acqAt, ends, example)
		}
		for j, e := range byKey[key] {
			if !used[j] && e.Event == "acquired" && !overlaps(gaps, e.At.Add(-3*time.Second), e.At) {
				l.Invented++
				example("invented: acquired %s %q at %s", e.Key, e.Value, e.At.Format("15:04:05.000"))
			}
		}
	}
	contendedBy(l, r.Faults, gaps, recsByKey, events)
	for key, evs := range byKey {
		if len(recsByKey[key]) > 0 || !(strings.HasPrefix(key, "rs:") || strings.HasPrefix(key, "rl:")) {
			continue
		}
		for _, e := range evs {
			if e.Event == "acquired" && !overlaps(gaps, e.At.Add(-3*time.Second), e.At) {
				l.Invented++
				example("invented: acquired %s %q at %s", e.Key, e.Value, e.At.Format("15:04:05.000"))
			}
		}
	}
	if l.Logged < 100 || l.Overruns == 0 {
		s.fail("the workloads did too little to judge: %d lifecycles, %d overruns", l.Logged, l.Overruns)
	}
	wrong := l.Missed + l.Doubled + l.WrongEnd + l.ReleasedExpired + l.Invented
	if wrong > 0 && wrong <= shortSoakBound(l.Matched) && os.Getenv("SOAK") == "" && l.OverrunsSeen >= l.Overruns-l.OverrunsInGaps {
		// The short soak of make test allows the feed's open inference failures (the
		// simulator's known failures: docs/live.md, What it cannot see) up to its bound;
		// make soak allows none. Said, not hidden:
		s.t.Logf("within the short soak's bound (%d of %d matched): %d missed, %d doubled, %d wrong end, %d released reported expired, %d invented; e.g. %v (events and logs: %s)",
			shortSoakBound(l.Matched), l.Matched, l.Missed, l.Doubled, l.WrongEnd, l.ReleasedExpired, l.Invented, l.Examples, l.Dump)
		return
	}
	if wrong > 0 || l.OverrunsSeen < l.Overruns-l.OverrunsInGaps {
		s.fail("lifecycles against the workloads' logs: %d missed, %d doubled, %d wrong end, %d released reported expired, %d invented, overruns %d/%d reported (%d in gaps); e.g. %v (events and logs: %s)",
			l.Missed, l.Doubled, l.WrongEnd, l.ReleasedExpired, l.Invented, l.OverrunsSeen, l.Overruns, l.OverrunsInGaps, l.Examples, l.Dump)
	}
}

// shortSoakBound is how many lifecycles the short soak (SOAK unset) lets the feed get
// wrong of matched: 1 in 500. On this project's 2-core CI machine the 2-minute soak
// got 0 to 2 of about 2,500 wrong when the machine ran nothing else, and 11 to 12 at
// a load of 8 to 10 (a starved feed). `make soak` lets none through.
func shortSoakBound(matched int) int { return matched / 500 }

// contendedBy puts each contended event down to what explains it (see contendedCause),
// with examples of those nothing explains. recsByKey is sorted by start.
func contendedBy(l *lifecycleFigures, faults []*faultRun, gaps []window, recsByKey map[string][]churnRecord, events []liveEvent) {
	l.Contended = map[string]int{}
	for _, e := range events {
		if e.Event != "contended" {
			continue
		}
		cause := contendedCause(e, recsByKey[e.Key], faults, gaps)
		l.Contended[cause]++
		if cause == "unexplained" && len(l.ContendedUnexplained) < 10 {
			l.ContendedUnexplained = append(l.ContendedUnexplained, fmt.Sprintf("%s %q on %d masters, held %s ms, at %s",
				e.Key, e.Value, e.Masters, heldMs(e), e.At.Format("15:04:05.000")))
		}
	}
}

// contendedCause is the first that explains contended event e: a failed attempt on its
// key (e lies between the attempt's start and the next one's; recs sorted by start), a
// fault (from 1 s before it began to 3 s after it ended, by the fault's name), a feed
// gap, or nothing ("unexplained").
func contendedCause(e liveEvent, recs []churnRecord, faults []*faultRun, gaps []window) string {
	at := e.At.UnixNano()
	for i, rec := range recs {
		if rec.End == "failed" && at >= rec.StartedNs && (i+1 == len(recs) || at < recs[i+1].StartedNs) {
			return "a failed attempt"
		}
	}
	for _, f := range faults {
		if !e.At.Before(f.Start.Add(-time.Second)) && !e.At.After(f.End.Add(3*time.Second)) {
			return f.Fault
		}
	}
	if overlaps(gaps, e.At.Add(-3*time.Second), e.At) {
		return "a feed gap"
	}
	return "unexplained"
}

// causes writes counts by cause, the most first: "a ×3, b ×1", or "none".
func causes(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return cmp.Or(strings.Join(out, ", "), "none")
}

func heldMs(e liveEvent) string {
	if e.HeldMs == nil {
		return "?"
	}
	return fmt.Sprintf("%.1f", *e.HeldMs)
}

// dumpLifecycles writes the events and the workloads' logs beside the report (for a
// failure to be looked into) and returns where.
func (s *soak) dumpLifecycles(work []workResult, events []liveEvent) string {
	path := strings.TrimSuffix(soakReportPath(), ".json") + ".lifecycles.ndjson"
	f, err := os.Create(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, e := range events {
		enc.Encode(map[string]any{"event": e})
	}
	for _, w := range work {
		for _, r := range w.recs {
			enc.Encode(map[string]any{"logged": r})
		}
	}
	return path
}

// judgeOne judges one logged lifecycle against the events matched to it (nAcq
// acquired events, the last at acqAt, and ends).
func (s *soak) judgeOne(l *lifecycleFigures, rec churnRecord, gaps []window, nAcq int, acqAt time.Time, ends []liveEvent, example func(string, ...any)) {
	acquired, ended := time.Unix(0, rec.AcquiredNs), time.Unix(0, rec.EndedNs)
	inGap := overlaps(gaps, acquired.Add(-2*time.Second), ended.Add(time.Second))
	var kinds []string
	expired := 0
	for _, e := range ends {
		kinds = append(kinds, e.Event)
		if e.Event == "expired" {
			expired++
		}
	}
	if rec.End == "released" && expired > 0 {
		l.ReleasedExpired++
		example("released %s %q at %s reported expired (in a gap: %v)", rec.Key, rec.Value, acquired.Format("15:04:05.000"), inGap)
	}
	if rec.End == "expired" {
		l.Overruns++
		if expired > 0 {
			l.OverrunsSeen++
		} else if inGap {
			l.OverrunsInGaps++
		}
	}
	if inGap {
		l.InGaps++
		return
	}
	switch {
	case nAcq == 0 || len(ends) == 0:
		l.Missed++
		example("missed %s %s %q at %s: %d acquired, ends %v", rec.End, rec.Key, rec.Value, acquired.Format("15:04:05.000"), nAcq, kinds)
	case nAcq > 1 || len(ends) > 1:
		l.Doubled++
		example("doubled %s %s %q at %s: %d acquired, ends %v", rec.End, rec.Key, rec.Value, acquired.Format("15:04:05.000"), nAcq, kinds)
	case ends[0].Event != rec.End:
		l.WrongEnd++
		example("%s %s %q at %s reported %s", rec.End, rec.Key, rec.Value, acquired.Format("15:04:05.000"), ends[0].Event)
	default:
		l.Matched++
		if acqAt.Sub(acquired) > lateAcquired {
			// Matched by time, it still lies nearer the lock's release than its
			// set: the feed took the key's changes the wrong way round.
			l.Late++
			if len(l.LateExamples) < 10 {
				l.LateExamples = append(l.LateExamples, fmt.Sprintf("%s %q acquired at %s, reported at %s", rec.Key, rec.Value,
					acquired.Format("15:04:05.000"), acqAt.Format("15:04:05.000")))
			}
		}
	}
}

// lateAcquired is how long after the workload's own acquisition its acquired event may
// come before the report counts it late: the soak's workers hold locks 40 ms, so an
// acquired event taken from the release (changes taken the wrong way round) is later.
const lateAcquired = 20 * time.Millisecond

// Stderr lines the processes under test may write, each with why.
var expectedStderr = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`^redlockctl serve: serving http://`), "serve's start-up line"},
	{regexp.MustCompile(`^redlockctl serve: recording every lock lifecycle to `), "serve's start-up line for its history store"},
	{regexp.MustCompile(`^redlockctl serve: stopped$`), "serve's last line after SIGTERM"},
	{regexp.MustCompile(`^redlockctl serve: master m[1-5] (down \(\w+\): |answers again$)`),
		"a master's change of state, which judgeServeDown holds to the fault schedule by master_up"},
	{regexp.MustCompile(`^redlockctl serve: reconcile: master m[1-5]: key "[^"]*": (missing|gone|value|ttl) `),
		"a row a reconciliation found the feed had got wrong, which judgeMismatches holds to the fault schedule by redlockctl_reconcile_mismatches_total"},
	{consoleMismatch, "the same in the console, printed when it exits, which judgeMismatches holds to the fault schedule by its time"},
}

// consoleMismatch is a reconciliation mismatch the console prints when it exits: its
// master and when it was found.
var consoleMismatch = regexp.MustCompile(`^redlockctl console: reconcile: master (m[1-5]): key "[^"]*": (?:missing|gone|value|ttl) .* at (\d\d:\d\d:\d\d\.\d{3})$`)

// judgeStderr holds serve's, events' and the console's stderr to expectedStderr.
func (s *soak) judgeStderr(r *soakReport, work []workResult) {
	r.StderrLines = map[string]int{}
	con, _ := readFileString(s.conErr)
	for _, p := range []struct{ name, text string }{
		{"serve", s.serveLog.text()}, {"events", s.ev.stderr.String()}, {"console", con},
	} {
		for _, line := range strings.Split(strings.TrimSpace(p.text), "\n") {
			if line == "" {
				continue
			}
			ok := false
			for _, e := range expectedStderr {
				ok = ok || e.re.MatchString(line)
			}
			if ok {
				r.StderrLines[p.name]++
				continue
			}
			r.Unexplained = append(r.Unexplained, p.name+": "+line)
		}
	}
	if len(r.Unexplained) > 0 {
		s.fail("%d stderr lines nobody explained, e.g. %q", len(r.Unexplained), r.Unexplained[0])
	}
}

func readFileString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
