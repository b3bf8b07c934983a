package wire

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestLeanPacesTheCollectorOnlyWhileItRuns(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	leanLast.Store(0) // the first poll of a process
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	got := Lean(func() int {
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		if during.NumGC <= before.NumGC {
			t.Errorf("no collection before poll ran (NumGC %d, then %d)", before.NumGC, during.NumGC)
		}
		if pct := debug.SetGCPercent(400); pct != 100 {
			t.Errorf("GC percent %d while the first poll runs, want 100", pct)
		}
		return 42
	})
	if got != 42 {
		t.Fatalf("Lean returned %d, want poll's 42", got)
	}
	if pct := debug.SetGCPercent(100); pct != 100 {
		t.Fatalf("GC percent %d after Lean, want 100 again", pct)
	}
}

// The pace follows the last poll's size, not the heap's: a heap that holds much that
// is not the poll's does not let the next poll double it, and a poll that allocated
// far more than the heap holds lets it double at most.
func TestLeanPaceFollowsThePoll(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	held := make([]byte, 256<<20) // live, and not the poll's
	for i := range held {
		held[i] = 1
	}
	for _, c := range []struct {
		last     uint64
		min, max int
	}{{1 << 20, 10, 10}, {128 << 20, 55, 70}, {4 << 30, 100, 100}} {
		leanLast.Store(c.last)
		Lean(func() int {
			if pct := debug.SetGCPercent(-1); pct < c.min || pct > c.max {
				t.Errorf("last poll %d MiB, live heap 256 MiB: GC percent %d, want %d-%d", c.last>>20, pct, c.min, c.max)
			}
			return 0
		})
	}
	if leanLast.Load() > 1<<20 {
		t.Errorf("a poll that allocated nothing recorded %d bytes", leanLast.Load())
	}
	runtime.KeepAlive(held)
}

// LeanUpTo caps the pace that the last poll's size sets, and lets a small heap grow by
// its floor at least.
func TestLeanUpToCapsThePace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	held := make([]byte, 64<<20) // live, and not the poll's
	for i := range held {
		held[i] = 1
	}
	for _, c := range []struct {
		last     uint64
		floor    uint64
		min, max int
	}{{4 << 30, 0, 25, 25}, {1 << 20, 0, 10, 10}, {4 << 30, 32 << 20, 45, 50}, {1 << 20, 1 << 30, 100, 100}} {
		leanLast.Store(c.last)
		LeanUpTo(25, c.floor, func() int {
			if pct := debug.SetGCPercent(-1); pct < c.min || pct > c.max {
				t.Errorf("last poll %d MiB, floor %d MiB, live heap 64 MiB, at most 25%%: GC percent %d, want %d-%d", c.last>>20, c.floor>>20, pct, c.min, c.max)
			}
			return 0
		})
	}
	runtime.KeepAlive(held)
}

// HoldLean keeps a poll's pace between polls, and LeanUpTo gives it back when its
// poll returns; a pace of 5 stays 5 while the poll runs.
func TestHoldLeanPacesBetweenPolls(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	held := make([]byte, 256<<20) // live
	for i := range held {
		held[i] = 1
	}
	runtime.GC()
	HoldLean(5, 8<<20) // 8 MiB is 3% of 256 MiB
	if pct := debug.SetGCPercent(-1); pct != 5 {
		t.Fatalf("GC percent %d after HoldLean(5, 8 MiB) on a 256 MiB heap, want 5", pct)
	}
	debug.SetGCPercent(5)
	leanLast.Store(1 << 20)
	LeanUpTo(5, 8<<20, func() int {
		if pct := debug.SetGCPercent(-1); pct != 5 {
			t.Errorf("GC percent %d while LeanUpTo(5, 8 MiB) runs, want 5", pct)
		}
		debug.SetGCPercent(5)
		return 0
	})
	if pct := debug.SetGCPercent(-1); pct != 5 {
		t.Errorf("GC percent %d after LeanUpTo, want HoldLean's 5 again", pct)
	}
	HoldLean(5, 1<<30) // a floor over the heap: as much again at most
	if pct := debug.SetGCPercent(100); pct != 100 {
		t.Errorf("GC percent %d after HoldLean(5, 1 GiB) on a 256 MiB heap, want 100", pct)
	}
	runtime.KeepAlive(held)
}
