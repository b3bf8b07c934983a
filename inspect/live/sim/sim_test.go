package sim

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/live"
)

var (
	seeds    = flag.Int("sim.seeds", 0, "how many seeded schedules TestSchedules runs (0: the default for the build)")
	first    = flag.Uint64("sim.first", 1, "the first seed")
	only     = flag.String("sim.workloads", "", "comma-separated workloads to draw from (empty: all)")
	replay   = flag.Uint64("sim.replay", 0, "replay one seed with its trace")
	maxFails = flag.Int("sim.maxfails", 5, "failing seeds to print in full")
	update   = flag.Bool("sim.update", false, "rewrite "+knownFile+" with the seeds that fail now")
	feedLag  = flag.Duration("sim.feedlag", 0, "every schedule's feed handles everything this long after it came (see Schedule.FeedLag); the known failures are for 0")
	feedSkew = flag.Duration("sim.feedskew", 0, "every schedule's feed reads each master up to this much late, stamped then (see Schedule.FeedSkew); the known failures are for 0")
	keys     = flag.Int("sim.keys", 1, "each workload runs on this many keys at once (see Schedule.Keys); the known failures are for 1")
	digest   = flag.String("sim.digest", "", "write each schedule's digest (its events and its reads) to this file, a line a seed: two runs that must behave alike compare by diff")
)

// knownFile lists the seeds of the default run (all workloads) that fail today, with
// what failed: the feed's open inference problems, each a replayable schedule. A seed
// that fails and is not listed is a regression; one listed that passes is progress
// (rewrite the file with -sim.update).
const knownFile = "testdata/known-failures"

func workloads() []string {
	if *only == "" {
		return nil
	}
	return strings.Split(*only, ",")
}

func knownFailures(t *testing.T) map[uint64]bool {
	f, err := os.Open(knownFile)
	if err != nil {
		t.Fatalf("the known failures: %v", err)
	}
	defer f.Close()
	known := map[uint64]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		seed, err := strconv.ParseUint(strings.Fields(text)[0], 10, 64)
		if err != nil {
			t.Fatalf("%s:%d: %v", knownFile, line, err)
		}
		known[seed] = true
	}
	return known
}

func TestSchedules(t *testing.T) {
	if *replay != 0 {
		s := NewSchedule(*replay, workloads())
		s.FeedLag, s.FeedSkew, s.Keys = *feedLag, *feedSkew, *keys
		var b strings.Builder
		live.Debugf = func(format string, args ...any) { fmt.Fprintf(&b, "           "+format+"\n", args...) }
		defer func() { live.Debugf = nil }()
		w := Run(s, func(at int64, format string, args ...any) {
			fmt.Fprintf(&b, "%9.3fms ", float64(at-epoch)/1e6)
			fmt.Fprintf(&b, format+"\n", args...)
		})
		t.Logf("%s%s", s, b.String())
		for _, f := range Check(w, s.Tolerance()) {
			t.Error(f)
		}
		return
	}
	n := *seeds
	if n == 0 {
		n = defaultSeeds
	}
	var known map[uint64]bool
	if *only == "" && !*update && *feedLag == 0 && *feedSkew == 0 && *keys <= 1 {
		known = knownFailures(t)
	}
	start := time.Now()
	var failing []string
	newFails, fixed, lifecycles, reads, stalled, splits := 0, 0, 0, 0, 0, 0
	kinds := map[string]int{}
	var digests strings.Builder
	for seed := *first; seed < *first+uint64(n); seed++ {
		s := NewSchedule(seed, workloads())
		s.FeedLag, s.FeedSkew, s.Keys = *feedLag, *feedSkew, *keys
		w := Run(s, nil)
		if *digest != "" {
			fmt.Fprintf(&digests, "%d %s\n", seed, digestOf(w))
		}
		lifecycles += len(w.Log.Locks)
		reads += w.Reads
		bad, sp := Judge(w, s.Tolerance())
		splits += sp
		if len(bad) == 0 {
			if known[seed] {
				fixed++
			}
			continue
		}
		var ks []string
		for _, b := range bad {
			k := kindOf(b)
			kinds[k]++
			ks = append(ks, k)
		}
		slices.Sort(ks)
		if s.FeedStall != nil {
			stalled++
		}
		failing = append(failing, fmt.Sprintf("%d %s %s", seed, strings.Join(s.Workloads, ","), strings.Join(slices.Compact(ks), ",")))
		if *update || known[seed] {
			continue
		}
		newFails++
		if newFails <= *maxFails {
			t.Errorf("%s%s\n  replay: go test ./inspect/live/sim -run TestSchedules -sim.replay %d -v\n  shrunk: %#v", s, strings.Join(bad, "\n"), seed, Shrink(s))
		}
	}
	t.Logf("%d schedules (seeds %d-%d), %d lifecycles, %.2f key reads each, %d split rounds reported as a lock (unread: the signal cannot tell); %d failed (%d of them with the feed stalled) %v (%d not known before), %d known failures now pass; in %v",
		n, *first, *first+uint64(n)-1, lifecycles, float64(reads)/float64(max(lifecycles, 1)), splits, len(failing), stalled, kinds, newFails, fixed, time.Since(start).Round(time.Millisecond))
	if newFails > *maxFails {
		t.Errorf("%d more schedules failed that were not known to", newFails-*maxFails)
	}
	if *digest != "" {
		if err := os.WriteFile(*digest, []byte(digests.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if *update {
		body := "# Seeds of the default run (all workloads) that fail today: seed, workloads, what failed.\n" +
			"# Written by: go test ./inspect/live/sim -run TestSchedules -sim.update\n" + strings.Join(failing, "\n") + "\n"
		if err := os.WriteFile(knownFile, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// digestOf hashes what the feed did in w: every event it emitted, and how many reads
// it asked for.
func digestOf(w *World) string {
	h := sha256.New()
	for _, e := range w.Events {
		b, _ := e.MarshalJSON()
		h.Write(b)
	}
	fmt.Fprintf(h, "reads %d", w.Reads)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// regression runs the first n seeds of one workload and fails on any disagreement
// whose kind is in kinds.
func regression(t *testing.T, workload string, n int, kinds ...string) {
	t.Helper()
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	regressionSeeds(t, workload, seeds, kinds...)
}

// regressionSeeds runs the given seeds of one workload, without stalls, and fails on
// any disagreement whose kind is in kinds.
func regressionSeeds(t *testing.T, workload string, seeds []uint64, kinds ...string) {
	t.Helper()
	for _, seed := range seeds {
		s := NewSchedule(seed, []string{workload})
		s.Stalls, s.FeedStall = nil, nil // as the seed was found, before schedules had stalls
		for _, b := range Check(Run(s, nil), s.Tolerance()) {
			for _, k := range kinds {
				if strings.Contains(b, k) {
					t.Errorf("seed %d: %s", seed, b)
				}
			}
		}
	}
}

// Every change of a fenced lock's counter was reported as a lock event (300 of 300
// schedules failed before companions were left out).
func TestFenceCounterIsNoLock(t *testing.T) {
	regression(t, WFenced, 50, "fence counter")
}

// Every hash was named Redisson, a plain (Sidekiq-like) one too (300 of 300 failed
// before hashes were decoded by their fields).
func TestPlainHashIsNotRedisson(t *testing.T) {
	regression(t, WPlainHash, 50, "library:")
	regression(t, WRedisson, 50, "library:")
}

// The simulator is deterministic: a seed replays exactly.
func TestSameSeedSameEvents(t *testing.T) {
	s := NewSchedule(42, nil)
	a, b := Run(s, nil), Run(s, nil)
	if len(a.Events) == 0 || len(a.Events) != len(b.Events) {
		t.Fatalf("%d and %d events", len(a.Events), len(b.Events))
	}
	for i := range a.Events {
		x, _ := a.Events[i].MarshalJSON()
		y, _ := b.Events[i].MarshalJSON()
		if string(x) != string(y) {
			t.Fatalf("event %d: %s, then %s", i, x, y)
		}
	}
}

// A client that extends its lock right after acquiring it, to prove it can (as
// `redlockctl run` did): the feed took that change for a release, then every later
// extension the wrong way round (210 to 275 of 300 schedules failed). The first seeds
// failed without the read of such a change. The others (11, 13, 23, ...) failed after
// it too: a master that delivered the proof before the set that made the quorum had it
// counted as the lock's first removal, which a read round later found was none, and
// the next job's lock, taken within LagWindow of this one's end, was then taken for
// one of a loop of short locks, whose proof is not read.
func TestRunsProofIsNoRelease(t *testing.T) {
	regressionSeeds(t, WRun, []uint64{1, 4, 5, 7, 8, 9, 10, 12, 18, 20, 21, 24, 25}, "invented", "missed", "release time", "wrong end")
	regressionSeeds(t, WRun, []uint64{11, 13, 23, 28, 36, 37, 40, 55, 67, 70, 90, 99, 100, 105}, "invented", "missed", "release time", "wrong end")
}

// A shrunk schedule still fails as the seed did, and is no larger.
func TestShrinkKeepsTheFailure(t *testing.T) {
	known := knownFailures(t)
	var seed uint64
	for s := uint64(1); seed == 0 && s < 1000; s++ {
		if known[s] && len(NewSchedule(s, nil).Workloads) > 1 {
			seed = s
		}
	}
	if seed == 0 {
		t.Fatal("no known failing seed with two workloads or more among the first 1,000")
	}
	s := NewSchedule(seed, nil)
	small := Shrink(s)
	if firstKind(small) != firstKind(s) {
		t.Errorf("seed %d fails with %q, shrunk with %q", seed, firstKind(s), firstKind(small))
	}
	if len(small.Workloads) > len(s.Workloads) || small.Active > s.Active || len(small.Faults) > len(s.Faults) {
		t.Errorf("shrunk %#v is larger than %#v", small, s)
	}
}

// A read round's reply that overtook a release's invalidation found the key gone on
// one master; the round then realigned the key and forgot that the read was ahead of
// the feed, so the invalidation that came next was taken for a set, and every change
// there the wrong way round until the next round (a missed lifecycle and invented
// ones: these redsync-style seeds failed before the round kept it).
func TestRoundKeepsReadAhead(t *testing.T) {
	regressionSeeds(t, WSequential, []uint64{107, 140, 144, 152, 239}, "missed", "invented")
}

// A part of a lock left on a master during its gap, found by the resync and removed
// later (its expiry), was reported `contended`: an attempt is one the feed saw set,
// not one a whole read found (these seeds failed so before).
func TestResyncFindsNoAttempt(t *testing.T) {
	regressionSeeds(t, WSequential, []uint64{57, 87}, "contended")
	regressionSeeds(t, WPipelined, []uint64{57, 87, 275}, "contended")
	regressionSeeds(t, WFenced, []uint64{275, 295}, "contended")
}

// A master evicted a lock's key (or lost it in a failover) within LagWindow of its
// set while a quorum held the lock on: its removal was reported `contended`, as a
// racing attempt's part. A part a read found holding the lock's own value is no
// contender's (these seeds failed so before).
func TestLostPartIsNoContender(t *testing.T) {
	regressionSeeds(t, WRun, []uint64{7, 126, 264}, "contended")
	regressionSeeds(t, WKeepAlive, []uint64{126}, "contended")
}

// A read that went out late (a feed short of CPU) found the key several changes on,
// and was taken as settling the first: the locks between were folded into one, and a
// later one's value given to the first (these seeds had 68 to 178 disagreements each
// before the changes that came while it was out were applied one by one). Folded
// locks are missed ones, and values and ends given to the wrong lock. (Seed 154 still
// invents one lifecycle after the loop's last release.)
func TestLateReadFoldsNoLocks(t *testing.T) {
	for _, seed := range []uint64{64, 154, 181} {
		s := NewSchedule(seed, []string{WReacquire})
		s.FeedLag = 10 * time.Millisecond
		for _, b := range Check(Run(s, nil), s.Tolerance()) {
			if k := kindOf(b); k == "missed" || k == "wrong value" || k == "release time" || k == "no end" {
				t.Errorf("seed %d, the feed 10 ms late: %s", seed, b)
			}
		}
	}
}

// With keyspace notifications, a racing round's parts were numbered into the wrong
// generations on some masters, and nothing realigned them: the read round, which
// realigns a key without notifications, was left out as needless where changes are
// named. Every later lock of the key then carried the value of one before it (these
// racing seeds failed so before).
func TestRoundRealignsNamedChanges(t *testing.T) {
	regressionSeeds(t, WRace, []uint64{14, 17, 52, 76, 92}, "wrong value", "no end", "invented", "missed")
}

// A read that found another value than the one a generation was set with was taken
// for that generation's own when the generation had no read of its own yet (its value
// came from the read that found its set): the next holder's value was given to the
// lock it replaced, and that lock carried on with no end (these handoff seeds failed
// so before a known value was compared, read or found).
//
// Seeds 51 and 58 are left out since the feed's reads draw their latencies apart from
// the clients' (a seed is then the same clients' schedule whatever the feed reads):
// they schedule other runs now, which fail with the tracker before and after the
// change that drew them apart (58: a master evicts the key in a handoff chain, and a
// master behind the others takes a handoff the others ended for a release).
func TestFoundValueIsCompared(t *testing.T) {
	regressionSeeds(t, WHandoff, []uint64{10, 12, 13, 25, 26, 34, 38, 40, 45, 46, 48, 69, 70, 71, 99}, "wrong value", "no end", "missed")
}

// Many busy keys on one master: a change a read was to settle (a set of a generation
// the others were already removing) waited behind other keys' reads, went out late and
// found the key several changes on, numbering that master's later sets wrong (a
// re-acquire loop on 8 keys; this seed failed so before such a change is inferred
// while other reads are out there).
func TestQueuedReadIsNotWaitedFor(t *testing.T) {
	s := NewSchedule(21, []string{WReacquire})
	s.Keys = 8
	s.Stalls, s.FeedStall = nil, nil
	if bad := Check(Run(s, nil), s.Tolerance()); len(bad) > 0 {
		t.Errorf("%d disagreements, the first %s", len(bad), bad[0])
	}
}

// A round of racing attempts that split the masters, none at a quorum but together
// covering one, removed before the feed could read them, is one short lock to the
// signal: the checker counts it as a split round, not an invented lock. With a value
// read it is invented, as it is where the failed attempts did not cover a quorum.
func TestSplitRoundIsNoInventedLock(t *testing.T) {
	ms := func(f float64) int64 { return epoch + int64(f*float64(time.Millisecond)) }
	judge := func(value string, reached ...int) ([]string, int) {
		w := &World{q: 3, now: ms(3000)}
		for i, r := range reached {
			w.Log.Failed = append(w.Log.Failed, Attempt{Key: "lk", Value: fmt.Sprint("v", i), At: ms(1.2), Reached: r})
		}
		w.Events = []live.Event{
			{At: time.Unix(0, ms(1.5)), Event: live.Acquired, Key: "lk", Value: value},
			{At: time.Unix(0, ms(3)), Event: live.Released, Key: "lk", Value: value},
		}
		return Judge(w, 10*time.Millisecond)
	}
	if bad, splits := judge("", 2, 2, 1); len(bad) != 0 || splits != 1 {
		t.Errorf("a split round of 2+2+1 masters of 5, unread: %q, %d split rounds; want none, 1", bad, splits)
	}
	if bad, splits := judge("v0", 2, 2, 1); len(bad) != 1 || !strings.HasPrefix(bad[0], "invented") || splits != 0 {
		t.Errorf("the same with a value read: %q, %d split rounds; want it invented", bad, splits)
	}
	if bad, _ := judge("", 1, 1); len(bad) != 1 || !strings.HasPrefix(bad[0], "invented") {
		t.Errorf("failed attempts on 2 masters of 5, unread: %q; want it invented", bad)
	}
}

// A master whose feed lags by more than the loop's locks are held delivered each set
// after the others' removals began; its lag was learned from zero a sixteenth at a
// time, so for its first few dozen sets the merge rule took a removal and the next set
// for one change, or a read raced its next removal, and its side ran a change behind
// the others' for the rest of the schedule: a stray `contended` at the loop's last
// release, and wrong values. Its lag starts at the median of its first three samples,
// and a set that lines up with it is a set (lateSet).
func TestLaggingMasterKeepsItsParity(t *testing.T) {
	regressionSeeds(t, WReacquire, []uint64{29, 50, 135, 154, 203}, "contended", "wrong value")
}

// A holder that hands the lock on in one write (a release and the next set, one
// invalidation on every master): a lock held less than ReadDelay was never read, so
// its handoff looked like a release, and the next handoff like a set: half the
// lifecycles missed (156 of 300 schedules without stalls failed; 22 now). The key's first
// lock is read at once, and a read that finds another value after one change keeps
// the key's short locks read (firstRead, keyState.handoff).
func TestHandoffFromTheFirstLock(t *testing.T) {
	regressionSeeds(t, WHandoff, []uint64{1, 11, 106, 108, 109, 110}, "missed")
}

// A failover to a replica that lags: the promoted master still holds a lock the others
// have ended (it missed the release), and the whole read after the gap took it into
// the open generation (or, with none open, started one with it): a stale value given
// to the next lock, then a lifecycle invented when the read round found the real one.
// A lock found set well before the open generation's first set, or before the key's
// last lock ended, is held apart (stale). Seeds of the default run, each failing so
// before (80 of the first 3,000 seeds with such a failover and no stall failed then,
// 47 after).
func TestFailoverLeftoverIsNoLock(t *testing.T) {
	for _, seed := range []uint64{104, 138, 1057, 1196, 1247} {
		s := NewSchedule(seed, nil)
		for _, b := range Check(Run(s, nil), s.Tolerance()) {
			t.Errorf("seed %d: %s", seed, b)
		}
	}
}

// A change of a master taken for a set of a generation the others were removing was
// read, and the read found the key gone: it was counted as a set and a removal merged
// into one invalidation. Where the change was the set alone and the removal came just
// after it (a loser's part on a lagging master, the loop's release), the removal's own
// invalidation then came, was taken for a set, and every change there the wrong way
// round: a stray `contended` (these seeds failed so before the next invalidation
// there was read).
func TestReadGoneAfterASetWaitsForTheRemoval(t *testing.T) {
	regressionSeeds(t, WReacquire, []uint64{8, 269, 324}, "contended")
	regressionSeeds(t, WSequential, []uint64{56}, "contended")
}

// A change of a lock whose value is known (released, or extended?) was read on every
// master: where locks are held long and extended often, those reads were most of the
// feed's cost to the servers (`do` about 30 key reads a lock cycle on 5 masters). One
// master's read now says for every master's change of the same write (change.go).
// These seeds fail as a first version did: a lagging master's change, tens of
// milliseconds after the others', began a round that the others' next write (the
// release) then joined, and was taken for an extension. A change joins a round only
// where the masters' lags line it up with the round's write.
func TestChangeRoundIsOneWrite(t *testing.T) {
	regressionSeeds(t, WRun, []uint64{40, 114, 139, 196}, "release time", "wrong end", "invented", "missed")
	regressionSeeds(t, WKeepAlive, []uint64{111, 114, 174, 191}, "release time", "wrong end", "invented", "missed")
	for _, c := range []struct {
		workload string
		max      float64 // key reads a lock, where every master's change was read: 29.9 and 26.5
	}{{WKeepAlive, 16}, {WRun, 19}} {
		reads, locks := 0, 0
		for seed := uint64(1); seed <= 100; seed++ {
			w := Run(NewSchedule(seed, []string{c.workload}), nil)
			reads += w.Reads
			locks += len(w.Log.Locks)
		}
		if got := float64(reads) / float64(locks); got > c.max {
			t.Errorf("%s: %.2f key reads a lock, want at most %.0f", c.workload, got, c.max)
		}
	}
}

// A master just over its maxmemory evicts a key before a command now and then (the
// soak's maxmemory-allkeys-lru fault, in whose spans its two last failures fell). A
// lock set on a bare quorum that one of its masters evicts is no longer held, whatever
// its client believes: where keyspace notifications name the eviction, the feed
// reports it `evicted`, which is right (seeds 524 and 715 were judged "wrong end").
func TestEvictingMaster(t *testing.T) {
	for _, seed := range []uint64{524, 715} {
		s := NewSchedule(seed, []string{WPipelined})
		if len(s.Faults) == 0 || !s.Faults[len(s.Faults)-1].Evicting {
			t.Fatalf("seed %d: no evicting master in %s", seed, s)
		}
		w := Run(s, nil)
		if len(w.Log.Evicted) == 0 {
			t.Errorf("seed %d: the master evicted nothing", seed)
		}
		for _, b := range Check(w, s.Tolerance()) {
			if strings.Contains(b, "wrong end") {
				t.Errorf("seed %d: %s", seed, b)
			}
		}
	}
}

// A racing attempt's part on one master, read there and removed again, gave its value
// to the generation it was numbered in; the masters that set the winner's lock later
// joined that generation, and the lock was reported with the loser's value (these
// racing seeds failed so before a value read on a master that has removed its part
// gave way to one read on a master that holds it).
func TestLosersValueGivesWay(t *testing.T) {
	regressionSeeds(t, WRace, []uint64{7, 41, 50, 99, 109, 112, 170, 203, 222, 236, 237, 269}, "wrong value")
}

// A read that found a racing attempt's part set, while that part's removal came
// after the read was sent, was taken as the state after the removal: the master
// held the loser's part for good, and the winner's sets joined it (these racing
// seeds failed so before such a read was asked once more).
func TestSetFoundBeforeItsRemovalIsReadAgain(t *testing.T) {
	regressionSeeds(t, WRace, []uint64{46, 114, 155, 252}, "wrong value", "invented")
}

// Racing attempts' parts numbered in one generation were named by the value read
// first, a loser's, where most of the masters holding the generation had been read
// with the winner's (these racing seeds failed so before an attempt took the value
// most of its masters were read with).
func TestAttemptTakesTheValueMostMastersHold(t *testing.T) {
	regressionSeeds(t, WRace, []uint64{56, 207}, "wrong value")
}

// With keyspace notifications, an answer to the reads of a key's first lock that came
// after the lock was handed on was taken for the next lock's: a named change does not
// count as an invalidation there, so the answer looked prompt, and the next lock
// carried the first one's value (these handoff seeds failed so before an answer was
// checked against the lock it was asked for).
func TestFirstReadAnswersTheLockItWasAskedFor(t *testing.T) {
	regressionSeeds(t, WHandoff, []uint64{133, 185}, "wrong value")
}

// A quiet key's probe found gone a master whose last change had been taken for a set
// that no other master joined and no read saw, and the feed reported a contended
// attempt: the change was the removal of the lock before, delivered late by a master
// that lags the others (these re-acquire seeds failed so before such a set was no
// attempt).
func TestLateRemovalIsNoAttempt(t *testing.T) {
	regressionSeeds(t, WReacquire, []uint64{162, 89, 261}, "contended")
	// A run lock's extension and release, delivered 20 ms late by one master after
	// the others had ended it, and the next lock's sets joining the attempt they
	// were taken for (the default run's seed 1742).
	defaultRun(t, 1742)
}

// defaultRun runs the given seeds of the default run (all workloads drawn) and fails
// on any disagreement.
func defaultRun(t *testing.T, seeds ...uint64) {
	t.Helper()
	for _, seed := range seeds {
		s := NewSchedule(seed, nil)
		for _, b := range Check(Run(s, nil), s.Tolerance()) {
			t.Errorf("seed %d: %s", seed, b)
		}
	}
}

// A lock acquired by invalidations alone was reported with the value read on a
// master that had removed its part since (a racing attempt's, numbered with it),
// where none of the masters holding it had been read (these seeds of the default
// run failed so before such a value was left unknown at the acquisition).
func TestRemovedPartNamesNoLock(t *testing.T) {
	defaultRun(t, 1344, 2704, 3351, 3420, 3728)
}

// A holder that extended its lock and released it a millisecond later: the read for
// the extension found the key gone (the release came before it was served), and each
// master's own invalidation of the release, which came next, was taken for the next
// lock's set, a lock no client held (these `run` seeds failed so before a change just
// after a read found the key gone was read too).
func TestReleaseJustAfterAnExtensionIsOneEnd(t *testing.T) {
	regressionSeeds(t, WRun, []uint64{146, 204, 207, 208, 217}, "invented")
}

// A read asked for a change right after a racing round's acquisition, whose value no
// read had named yet, found another attempt's set there: taken for the lock's own
// part extended, the round's lock was named with a loser's value, and its end came
// at the loser's release (this racing seed failed so before).
func TestYoungReadOfAnotherValue(t *testing.T) {
	regressionSeeds(t, WRace, []uint64{91}, "wrong value", "invented")
}
