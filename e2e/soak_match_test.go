package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// window is a stretch of time, as a gap of one master's feed.
type window struct{ from, to time.Time }

// gapWindows returns the feed's gaps: from a gap's start to the master's next resync
// (or the gap's own end, if later).
func gapWindows(events []liveEvent) []window {
	var out []window
	for i, e := range events {
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
func (s *soak) judgeLifecycles(r *soakReport, work []workResult, events []liveEvent) {
	l := &r.Lifecycles
	l.PerLib, l.Events = map[string]int{}, countKinds(events)
	gaps := gapWindows(events)
	l.Gaps = len(gaps)
	acq := map[string]int{}
	ends := map[string][]string{}
	for _, e := range events {
		switch e.Event {
		case "acquired":
			acq[e.Value]++
		case "released", "expired", "force-released", "contended", "evicted":
			ends[e.Value] = append(ends[e.Value], e.Event)
		}
	}
	logged := map[string]bool{}
	example := func(format string, args ...any) {
		if len(l.Examples) < 10 {
			l.Examples = append(l.Examples, fmt.Sprintf(format, args...))
		}
	}
	for _, w := range work {
		if w.err != nil {
			s.fail("workload %s: %v\n%s", w.lib, w.err, w.stderr)
			continue
		}
		l.ReleaseErrors += strings.Count(w.stderr, "churn: release:")
		for _, rec := range w.recs {
			if rec.End == "failed" {
				l.Failed++
				continue
			}
			l.Logged++
			l.PerLib[w.lib]++
			logged[rec.Value] = true
			s.judgeOne(l, rec, gaps, acq[rec.Value], ends[rec.Value], example)
		}
	}
	for _, e := range events {
		if e.Event == "acquired" && (strings.HasPrefix(e.Key, "rs:") || strings.HasPrefix(e.Key, "rl:")) &&
			!logged[e.Value] && !overlaps(gaps, e.At.Add(-3*time.Second), e.At) {
			l.Invented++
			example("invented: acquired %s %q at %s", e.Key, e.Value, e.At.Format("15:04:05.000"))
		}
	}
	if l.Logged < 100 || l.Overruns == 0 {
		s.fail("the workloads did too little to judge: %d lifecycles, %d overruns", l.Logged, l.Overruns)
	}
	if l.Missed+l.Doubled+l.WrongEnd+l.ReleasedExpired+l.Invented > 0 || l.OverrunsSeen < l.Overruns-l.overrunsInGaps() {
		s.fail("lifecycles against the workloads' logs: %d missed, %d doubled, %d wrong end, %d released reported expired, %d invented, overruns %d/%d reported; e.g. %v",
			l.Missed, l.Doubled, l.WrongEnd, l.ReleasedExpired, l.Invented, l.OverrunsSeen, l.Overruns, l.Examples)
	}
}

// overrunsInGaps is filled by judgeOne through the Examples-free counter below.
func (l *lifecycleFigures) overrunsInGaps() int { return l.overrunGapped }

// judgeOne judges one logged lifecycle against the events with its value.
func (s *soak) judgeOne(l *lifecycleFigures, rec churnRecord, gaps []window, nAcq int, ends []string, example func(string, ...any)) {
	acquired, ended := time.Unix(0, rec.AcquiredNs), time.Unix(0, rec.EndedNs)
	inGap := overlaps(gaps, acquired.Add(-2*time.Second), ended.Add(time.Second))
	expired := 0
	for _, e := range ends {
		if e == "expired" {
			expired++
		}
	}
	if rec.End == "released" && expired > 0 {
		l.ReleasedExpired++
		example("released %s %q reported expired (gap: %v)", rec.Key, rec.Value, inGap)
	}
	if rec.End == "expired" {
		l.Overruns++
		if expired > 0 {
			l.OverrunsSeen++
		} else if inGap {
			l.overrunGapped++
		}
	}
	if inGap {
		l.InGaps++
		return
	}
	switch {
	case nAcq == 0 || len(ends) == 0:
		l.Missed++
		example("missed %s %s %q at %s: %d acquired, ends %v", rec.End, rec.Key, rec.Value, acquired.Format("15:04:05.000"), nAcq, ends)
	case nAcq > 1 || len(ends) > 1:
		l.Doubled++
		example("doubled %s %s %q at %s: %d acquired, ends %v", rec.End, rec.Key, rec.Value, acquired.Format("15:04:05.000"), nAcq, ends)
	case ends[0] != rec.End:
		l.WrongEnd++
		example("%s %s %q at %s reported %s", rec.End, rec.Key, rec.Value, acquired.Format("15:04:05.000"), ends[0])
	default:
		l.Matched++
	}
}

// Stderr lines the processes under test may write, each with why.
var expectedStderr = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`^redlockctl serve: serving http://`), "serve's start-up line"},
	{regexp.MustCompile(`^redlockctl serve: stopped$`), "serve's last line after SIGTERM"},
}

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
