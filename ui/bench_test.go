package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/redlockctl/redlockctl/inspect"
)

// keystrokeCost is the Update+View time of each key press of one kind (the longest
// stretch on the UI goroutine), and when what it asked for had landed (work done in
// commands, off the UI path, included).
type keystrokeCost struct {
	kind   string
	times  []time.Duration
	totals []time.Duration
}

// timed delivers msg as bubbletea does: Update and View on the UI goroutine, the
// returned commands elsewhere, their messages back through Update and View. ui is
// the longest single Update+View, total the time until everything had landed.
func (h *harness) timed(msg tea.Msg) (ui, total time.Duration) {
	start := time.Now()
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		t := time.Now()
		_, cmd := h.m.Update(msg)
		_ = h.m.View()
		ui = max(ui, time.Since(t))
		var run func(tea.Cmd)
		run = func(c tea.Cmd) {
			if c == nil {
				return
			}
			switch m := c().(type) {
			case nil, pendingTick:
			case tea.BatchMsg:
				for _, c := range m {
					run(c)
				}
			default:
				queue = append(queue, m)
			}
		}
		run(cmd)
	}
	return ui, time.Since(start)
}

func (k keystrokeCost) landed() float64 {
	return float64(slices.Max(k.totals)) / 1e6
}

func (k keystrokeCost) mean() float64 {
	var sum time.Duration
	for _, d := range k.times {
		sum += d
	}
	return float64(sum) / float64(len(k.times)) / 1e6
}

func (k keystrokeCost) worst() float64 {
	return float64(slices.Max(k.times)) / 1e6
}

// measureKeystrokes opens the console at 120×40 on snap and times Update+View for
// cursor moves, sort changes (every column), filter typing and reversing.
func measureKeystrokes(b *testing.B, snap *inspect.Snapshot) (costs []keystrokeCost, pollMs float64) {
	h := newHarness(b, testConfig(), &fakeActions{t: b}, 120, 40)
	h.snaps = []*inspect.Snapshot{snap}
	// The big snapshot arrives: rows built, sorted and filtered in the poll's command,
	// then applied on the UI path.
	ui, _ := h.timed(keyMsg("r"))
	pollMs = float64(ui) / 1e6
	timeKeys := func(kind string, keys ...string) {
		c := keystrokeCost{kind: kind}
		for _, k := range keys {
			ui, total := h.timed(keyMsg(k))
			c.times = append(c.times, ui)
			c.totals = append(c.totals, total)
		}
		costs = append(costs, c)
	}
	timeKeys("cursor move (j/k/pgdn/G/g)", "j", "j", "j", "pgdown", "pgdown", "k", "G", "k", "g", "j")
	sorts := make([]string, h.m.table.nColumns())
	for i := range sorts {
		sorts[i] = "s"
	}
	timeKeys("sort column (s, all 12)", sorts...)
	timeKeys("reverse order (o)", "o", "o")
	h.timed(keyMsg("/"))
	timeKeys("filter char (/job:00 + bksp)", "j", "o", "b", ":", "0", "0", "backspace", "backspace", "backspace")
	h.timed(keyMsg("enter"))
	timeKeys("anomalies only (!)", "!", "!")
	if len(h.m.table.rows) != len(snap.Resources) {
		b.Fatalf("table has %d rows, want %d", len(h.m.table.rows), len(snap.Resources))
	}
	return costs, pollMs
}

// BenchmarkKeystroke measures Update+View per keystroke on a 100k-resource snapshot
// with 5 masters, next to a 1k-resource baseline measured in the same run. One
// iteration is the whole measurement. Target: ≤ 30 ms per keystroke at 100k.
func BenchmarkKeystroke(b *testing.B) {
	big, small := bigSnapshot(100_000), bigSnapshot(1_000)
	for i := 0; i < b.N; i++ {
		base, basePoll := measureKeystrokes(b, small)
		costs, poll := measureKeystrokes(b, big)
		var sb strings.Builder
		fmt.Fprintf(&sb, "\nUpdate+View per keystroke, 120x40, 5 masters (ms: mean / worst)\n")
		fmt.Fprintf(&sb, "%-32s %18s %18s   target\n", "keystroke", "1k rows (base)", "100k rows")
		worst := 0.0
		for j, c := range costs {
			fmt.Fprintf(&sb, "%-32s %8.2f / %7.2f %8.2f / %7.2f   <= 30\n", c.kind, base[j].mean(), base[j].worst(), c.mean(), c.worst())
			worst = max(worst, c.worst())
			b.ReportMetric(c.mean(), "ms/key-"+strings.Fields(c.kind)[0])
		}
		fmt.Fprintf(&sb, "%-32s %18.2f %18.2f   (UI path per poll; rows are built in the poll's command)\n", "new snapshot applied", basePoll, poll)
		fmt.Fprintf(&sb, "worst keystroke at 100k: %.2f ms (target 30 ms)\n", worst)
		b.ReportMetric(worst, "ms/key-worst")
		b.ReportMetric(poll, "ms/poll-100k")
		fmt.Print(sb.String())
	}
}
