//go:build benchlarge

package ui

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkKeystrokeLarge is BenchmarkKeystroke at 1M resources (make bench-large):
// Update+View per keystroke, target ≤ 30 ms.
func BenchmarkKeystrokeLarge(b *testing.B) {
	rows := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("REDLOCKCTL_BENCH_ROWS")); err == nil && n > 0 {
		rows = n
	}
	big := bigSnapshot(rows)
	for range b.N {
		costs, poll := measureKeystrokes(b, big)
		var sb strings.Builder
		fmt.Fprintf(&sb, "\nUpdate+View per keystroke on the UI path, 120x40, 5 masters, 1M rows (ms)\n")
		fmt.Fprintf(&sb, "%-32s %18s %14s   target\n", "keystroke", "mean / worst", "landed by")
		worst := 0.0
		for _, c := range costs {
			fmt.Fprintf(&sb, "%-32s %8.2f / %7.2f %14.1f   <= 30 (UI path)\n", c.kind, c.mean(), c.worst(), c.landed())
			worst = max(worst, c.worst())
		}
		fmt.Fprintf(&sb, "%-32s %18.2f   <= 50: a keystroke waits at most this (rows built in the poll's command)\n", "new snapshot applied", poll)
		fmt.Fprintf(&sb, "worst keystroke at 1M: %.2f ms (target 30 ms)\n", worst)
		b.ReportMetric(worst, "ms/key-worst")
		b.ReportMetric(poll, "ms/snapshot-ui")
		fmt.Print(sb.String())
	}
}
