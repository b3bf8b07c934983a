package inspect

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// sprintfDuration is Duration as fmt writes it, the reference of AppendDuration.
func sprintfDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// Duration writes what fmt would, at each unit's edges, on rounding edges (9.95s) and
// on random durations of every magnitude, negative ones too.
func TestDurationAsFmt(t *testing.T) {
	ds := []time.Duration{0, -1, -time.Hour, time.Millisecond - 1, time.Second - 1, time.Second,
		9950 * time.Millisecond, 9949 * time.Millisecond, 59950 * time.Millisecond, time.Minute - 1, time.Minute,
		time.Hour - 1, time.Hour, 240 * time.Hour, 1<<63 - 1}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		ds = append(ds, time.Duration(r.Int64N(int64(1000*time.Hour)))>>r.IntN(40))
	}
	for _, d := range ds {
		if got, want := Duration(d), sprintfDuration(d); got != want {
			t.Fatalf("Duration(%d) = %q, want %q", d, got, want)
		}
		if got := string(AppendDuration([]byte("x"), d)); got != "x"+sprintfDuration(d) {
			t.Fatalf("AppendDuration(x, %d) = %q", d, got)
		}
	}
}
