package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// reported is one lifecycle as the feed reported it.
type reported struct {
	key, value string
	acq, end   int64
	how        string
	library    string
	matched    bool
}

// Check holds the feed's events against the clients' log and returns every
// disagreement (none: the feed was right):
//   - every lifecycle is reported once, acquired within tol of the client's quorum,
//     with its value where the feed names one, and the right end;
//   - no lifecycle is invented, none is doubled;
//   - a `contended` is explained by a failed attempt on its key within ContendWindow;
//   - no event names a key that is not a lock (a fence counter);
//   - the library the feed names is the lock's own, and never one it is not.
func Check(w *World, tol time.Duration) []string {
	bad, _ := Judge(w, tol)
	return bad
}

// Judge is Check, and also counts the split rounds it excused: a lifecycle the feed
// reported without a value (it never read one), paired with no lock, where racing
// attempts on the key that all failed had together set a quorum of masters around
// it. Each master was set and cleared once, as by one short lock, and the feed cannot
// tell them apart (docs/live.md, "What it cannot see"); with a value read, it can,
// and such a lifecycle stays invented.
func Judge(w *World, tol time.Duration) (bad []string, splits int) {
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	ms := func(ns int64) string { return fmt.Sprintf("%.1fms", float64(ns-epoch)/1e6) }

	// Gaps: from a gap's start to its master's resync, and a stall the feed reported,
	// nothing there is judged.
	type span struct{ from, to int64 }
	var gaps []span
	for _, e := range w.Events {
		switch e.Event {
		case live.Gap:
			gaps = append(gaps, span{e.From.UnixNano(), w.now})
		case live.Stalled:
			gaps = append(gaps, span{e.From.UnixNano(), e.To.UnixNano()}) // said: what came then was handled late
		case live.Resync:
			for i := range gaps {
				if gaps[i].to == w.now {
					gaps[i].to = e.At.UnixNano()
					break
				}
			}
		}
	}
	t := int64(tol)
	inGap := func(ats ...int64) bool {
		for _, g := range gaps {
			for _, at := range ats {
				if at != 0 && at >= g.from-t && at <= g.to+t {
					return true
				}
			}
		}
		return false
	}
	var reps []*reported
	open := map[string][]*reported{}
	contended := map[string][]int64{}
	for _, e := range w.Events {
		at := e.At.UnixNano()
		if strings.HasSuffix(e.Key, ":fence") {
			fail("%s on %s at %s: a fence counter is not a lock", e.Event, e.Key, ms(at))
			continue
		}
		switch {
		case e.Event == live.Acquired:
			r := &reported{key: e.Key, value: e.Value, acq: at}
			reps = append(reps, r)
			open[e.Key] = append(open[e.Key], r)
		case e.Event == live.Contended:
			contended[e.Key] = append(contended[e.Key], at)
		case e.Ends():
			os := open[e.Key]
			i := slices.IndexFunc(os, func(r *reported) bool { return e.Value == "" || r.value == "" || r.value == e.Value })
			if i < 0 && inGap(at) {
				continue
			}
			if i < 0 {
				fail("%s of %s %q at %s with no acquired before it", e.Event, e.Key, e.Value, ms(at))
				continue
			}
			r := os[i]
			open[e.Key] = slices.Delete(os, i, i+1)
			r.end, r.how, r.library = at, e.Event, e.Library
			if r.value == "" {
				r.value = e.Value
			}
		}
	}
	matches := align(w.Log.Locks, reps, t, inGap)
	for _, lc := range w.Log.Locks {
		found := matches[lc]
		if found == nil {
			if !inGap(lc.Acquired, lc.Ended) {
				fail("missed: %s %q acquired at %s (%s, %s)", lc.Key, lc.Value, ms(lc.Acquired), lc.End, lc.Client)
			}
			continue
		}
		if inGap(lc.Acquired, lc.Ended, found.acq, found.end) {
			continue
		}
		if found.value != "" && found.value != lc.Value {
			fail("wrong value: %s acquired at %s reported %q, held %q", lc.Key, ms(lc.Acquired), found.value, lc.Value)
		}
		switch {
		case lc.Ended == 0 || found.end == 0 && lc.Ended > w.now-int64(2*time.Second):
			// still held at the end, or ended too late to be judged
		case found.end == 0:
			fail("no end: %s %q acquired at %s, %s at %s", lc.Key, lc.Value, ms(lc.Acquired), lc.End, ms(lc.Ended))
		case found.how == live.Evicted && evictedWhileHeld(w, lc, found.end, t):
			// A master evicted it while its holder held it, and the feed names the end
			// the fleet saw: a lock set on a bare quorum is no longer held once one of
			// its masters evicts it, whatever its client believes.
		case found.how != lc.End:
			fail("wrong end: %s %q acquired at %s reported %s at %s, %s at %s", lc.Key, lc.Value, ms(lc.Acquired), found.how, ms(found.end), lc.End, ms(lc.Ended))
		case lc.End == live.Released && (found.end < lc.Ended-t || found.end > lc.Ended+t):
			fail("release time: %s %q reported at %s, sent at %s", lc.Key, lc.Value, ms(found.end), ms(lc.Ended))
		}
		if found.library != "" && lc.Library != "" && !strings.HasPrefix(found.library, lc.Library) {
			fail("library: %s %q named %q, is %s", lc.Key, lc.Value, found.library, lc.Library)
		}
		if lc.NotLib != "" && strings.HasPrefix(found.library, lc.NotLib) {
			fail("library: %s %q named %q, is not %s", lc.Key, lc.Value, found.library, lc.NotLib)
		}
	}
	split := make([]bool, len(w.Log.Failed)) // each failed attempt is part of one split round
	for _, r := range reps {
		if r.matched || inGap(r.acq, r.end) {
			continue
		}
		if r.value == "" && splitRound(w, r, t, split) {
			splits++
			continue
		}
		fail("invented: %s %q acquired at %s (%s at %s)", r.key, r.value, ms(r.acq), r.how, ms(r.end))
	}
	used := make([]bool, len(w.Log.Failed)) // each failed attempt explains one contended
	for _, key := range slices.Sorted(maps.Keys(contended)) {
		for _, at := range contended[key] {
			i := -1
			for j, a := range w.Log.Failed {
				if !used[j] && a.Key == key && at >= a.At-t && at <= a.At+int64(live.ContendWindow) {
					i = j
					break
				}
			}
			if i >= 0 {
				used[i] = true
			} else if !inGap(at) {
				fail("contended on %s at %s: no attempt failed there", key, ms(at))
			}
		}
	}
	return bad, splits
}

// splitRound reports whether failed attempts on r's key, decided from tol before its
// acquisition to tol after its end and not yet taken by another split, reached a
// quorum of masters together; it takes them.
func splitRound(w *World, r *reported, tol int64, taken []bool) bool {
	end := max(r.end, r.acq)
	var these []int
	reached := 0
	for i, a := range w.Log.Failed {
		if !taken[i] && a.Key == r.key && a.At >= r.acq-tol && a.At <= end+tol {
			these = append(these, i)
			reached += a.Reached
		}
	}
	if len(these) < 2 || reached < w.q {
		return false
	}
	for _, i := range these {
		taken[i] = true
	}
	return true
}

// align pairs the logged locks of each key with the lifecycles reported for it, both
// in order of acquisition, keeping that order: the pairing of least cost, where a
// pair acquired within tol of each other costs how far apart they are (and tol/2 more
// when both name a value and the values differ), and a lock or a lifecycle left
// unpaired costs tol (nothing inside a gap or a reported stall, where nothing is
// judged). Matched lifecycles are marked. So an invented or missed
// lifecycle in a loop of locks shorter than tol is left unpaired where it is, and
// the ones after it are paired with their own; taking for each lock the first
// lifecycle within tol would shift them all, and report the error far from it.
func align(locks []*Lifecycle, reps []*reported, tol int64, inGap func(...int64) bool) map[*Lifecycle]*reported {
	out := map[*Lifecycle]*reported{}
	lk, rk := map[string][]*Lifecycle{}, map[string][]*reported{}
	for _, lc := range locks {
		lk[lc.Key] = append(lk[lc.Key], lc)
	}
	for _, r := range reps {
		rk[r.key] = append(rk[r.key], r)
	}
	for key, ls := range lk {
		rs := rk[key]
		slices.SortStableFunc(ls, func(a, b *Lifecycle) int { return cmp.Compare(a.Acquired, b.Acquired) })
		slices.SortStableFunc(rs, func(a, b *reported) int { return cmp.Compare(a.acq, b.acq) })
		n, m := len(ls), len(rs)
		cost := func(i, j int) (int64, bool) {
			d := max(rs[j].acq-ls[i].Acquired, ls[i].Acquired-rs[j].acq)
			if d > tol {
				return 0, false
			}
			if rs[j].value != "" && ls[i].Value != "" && rs[j].value != ls[i].Value {
				d += tol / 2
			}
			return d, true
		}
		// Leaving one unpaired costs tol, nothing inside a gap (where it is not judged).
		skipL, skipR := make([]int64, n), make([]int64, m)
		for i, lc := range ls {
			if !inGap(lc.Acquired, lc.Ended) {
				skipL[i] = tol
			}
		}
		for j, r := range rs {
			if !inGap(r.acq, r.end) {
				skipR[j] = tol
			}
		}
		// dp[i][j]: the least cost of the first i locks and j lifecycles; how[i][j]:
		// the step into it (0 a pair, 1 a lock unpaired, 2 a lifecycle unpaired).
		dp := make([]int64, (n+1)*(m+1))
		how := make([]uint8, (n+1)*(m+1))
		at := func(i, j int) int { return i*(m+1) + j }
		for i := range n + 1 {
			for j := range m + 1 {
				if i == 0 && j == 0 {
					continue
				}
				best, step := int64(math.MaxInt64), uint8(0)
				if i > 0 && j > 0 {
					if c, ok := cost(i-1, j-1); ok {
						best, step = dp[at(i-1, j-1)]+c, 0
					}
				}
				if i > 0 && dp[at(i-1, j)]+skipL[i-1] < best {
					best, step = dp[at(i-1, j)]+skipL[i-1], 1
				}
				if j > 0 && dp[at(i, j-1)]+skipR[j-1] < best {
					best, step = dp[at(i, j-1)]+skipR[j-1], 2
				}
				dp[at(i, j)], how[at(i, j)] = best, step
			}
		}
		for i, j := n, m; i > 0 || j > 0; {
			switch how[at(i, j)] {
			case 0:
				rs[j-1].matched, out[ls[i-1]] = true, rs[j-1]
				i, j = i-1, j-1
			case 1:
				i--
			default:
				j--
			}
		}
	}
	return out
}

// kindOf is a disagreement's kind: its text up to the first colon.
func kindOf(bad string) string {
	if i := strings.IndexByte(bad, ':'); i >= 0 {
		return bad[:i]
	}
	return bad
}

// evictedWhileHeld reports whether a master evicted lc's key while lc was held, at or
// before end (the end the feed reported), within tol.
func evictedWhileHeld(w *World, lc *Lifecycle, end, tol int64) bool {
	for _, e := range w.Log.Evicted {
		if e.Key == lc.Key && e.At >= lc.Acquired-tol && e.At <= min(lc.Ended, end)+tol {
			return true
		}
	}
	return false
}
