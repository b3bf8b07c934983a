package inspect

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestLeanPacesTheCollectorOnlyWhileItRuns(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	got := Lean(func() int {
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		if during.NumGC <= before.NumGC {
			t.Errorf("no collection before poll ran (NumGC %d, then %d)", before.NumGC, during.NumGC)
		}
		if pct := debug.SetGCPercent(400); pct != 400 {
			t.Errorf("GC percent %d while poll runs, want 400", pct)
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
