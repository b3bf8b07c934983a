package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/export/exporttest"
)

// The console and serve benchmarks run the built binary as a user does, for a while,
// against the e2eSet's masters with a default config (the masters and a pattern,
// nothing else), and sample what
// it shows and how much memory it holds. Knob: REDLOCKCTL_BENCH_LIVE=60s (how long
// each runs).

// liveStats is what sampling a long-running console or serve found.
type liveStats struct {
	peak       int64    // VmHWM at the end: the process's peak RSS
	thirds     [3]int64 // the highest VmRSS sample in each third of the run
	first      time.Duration
	snapshots  int // snapshots seen (polls completed)
	samples    int
	down       int // samples in which a master was reported down
	incomplete int // samples showing an incomplete snapshot
	slow       int // samples showing a slow poll

	// serve only: when every master's live feed was first up, the slowest scrape of
	// /metrics, the shortest and longest poll scraped, and the CPU time it used.
	feedUp           time.Duration
	scrapeMax        time.Duration
	pollMin, pollMax float64
	cpu              time.Duration
}

func (s liveStats) line(name string) string {
	if s.scrapeMax > 0 {
		name += fmt.Sprintf(" (feed up after %.1fs, polls %.1f-%.1fs, slowest scrape %v, CPU %.1fs)", s.feedUp.Seconds(), s.pollMin, s.pollMax, s.scrapeMax.Round(time.Millisecond), s.cpu.Seconds())
	}
	return fmt.Sprintf("%-34s peak %5.0f MiB (RSS by thirds %.0f/%.0f/%.0f MiB); first snapshot after %.1fs, %d snapshots; samples with a master down %d, incomplete %d, slow %d (of %d)",
		name, mib(s.peak), mib(s.thirds[0]), mib(s.thirds[1]), mib(s.thirds[2]), s.first.Seconds(), s.snapshots, s.down, s.incomplete, s.slow, s.samples)
}

// liveDuration is how long each console or serve run lasts.
func liveDuration() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("REDLOCKCTL_BENCH_LIVE")); err == nil && d > 0 {
		return d
	}
	return 60 * time.Second
}

// defaultConfig writes a config of the masters and a pattern alone and returns its
// path.
func (e *e2eSet) defaultConfig(b *testing.B) string {
	var cf strings.Builder
	cf.WriteString("[inspect]\npatterns = [\"lock:*\"]\n")
	for i, m := range e.ms {
		fmt.Fprintf(&cf, "\n[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
	}
	path := filepath.Join(e.dir, "default.toml")
	if err := os.WriteFile(path, []byte(cf.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// procStatus reads one "Vm…:" figure of a process's /proc status, in bytes (0 if
// unknown).
func procStatus(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// sample records one RSS sample taken at t into the thirds of a run of length d.
func (s *liveStats) sample(pid int, t, d time.Duration) {
	s.samples++
	third := min(2, int(3*t/d))
	s.thirds[third] = max(s.thirds[third], procStatus(pid, "VmRSS"))
}

var (
	polledAgo  = regexp.MustCompile(`polled (\S+) ago`)
	masterDown = regexp.MustCompile(`^\S+\s+\S+:\d+\s+down\b`) // a masters panel line
)

// runConsole runs the console in tmux (a 240×50 pane) for d, sampling its RSS and
// its header every 250 ms: a master reported down ("masters N/5 up" with N < 5), an
// incomplete snapshot (INCOMPLETE), a slow poll (SLOW), and each new snapshot (the
// header's poll age going down).
func (e *e2eSet) runConsole(b *testing.B, bin e2eBin, cfg string, d time.Duration) liveStats {
	pidFile := filepath.Join(e.dir, "console.pid")
	os.Remove(pidFile)
	tm := startTmuxSize(b, 240, 50, fmt.Sprintf("echo $$ > %s; exec %s --config %s", pidFile, bin.path, cfg))
	defer exec.Command("tmux", "-L", tm.socket, "kill-server").Run()
	start := time.Now()
	pid := 0
	for pid == 0 && time.Since(start) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
		if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
	}
	if pid == 0 {
		b.Fatalf("%s: the console never started", bin.name)
	}
	n := len(e.ms)
	up := fmt.Sprintf("masters %d/%d up", n, n)
	var s liveStats
	lastAge := time.Duration(-1)
	for t := time.Since(start); t < d; t = time.Since(start) {
		time.Sleep(250 * time.Millisecond)
		s.sample(pid, time.Since(start), d)
		screen := tm.capture(b)
		header, _, _ := strings.Cut(screen, "\n")
		m := polledAgo.FindStringSubmatch(header)
		if m == nil {
			continue // no snapshot yet
		}
		if s.first == 0 {
			s.first = time.Since(start)
		}
		if age, err := time.ParseDuration(m[1]); err == nil {
			if age < lastAge || lastAge < 0 {
				s.snapshots++
			}
			lastAge = age
		}
		if !strings.Contains(header, up) {
			s.down++
			var why []string // the masters panel's lines of the masters down
			for _, l := range strings.Split(screen, "\n") {
				if masterDown.MatchString(l) {
					why = append(why, strings.TrimSpace(l))
				}
			}
			b.Logf("%s: a master down at %v: %s", bin.name, time.Since(start).Round(time.Millisecond), strings.Join(why, "; "))
		}
		if strings.Contains(header, "INCOMPLETE") {
			s.incomplete++
		}
		if strings.Contains(header, "SLOW") {
			s.slow++
		}
	}
	s.peak = procStatus(pid, "VmHWM")
	tm.keys(b, "q")
	return s
}

// runServe runs `serve` for d, sampling its RSS every 250 ms and its /metrics every
// second: a master down (redlockctl_master_up 0), an incomplete or slow poll
// (redlockctl_poll_complete 0, redlockctl_poll_slow 1), and the polls completed.
func (e *e2eSet) runServe(b *testing.B, bin e2eBin, cfg string, d time.Duration) liveStats {
	cmd := exec.Command(bin.path, "serve", "--config", cfg, "--listen", "127.0.0.1:0")
	out := startLogged(b, cmd)
	addr := out.waitFor(b, regexp.MustCompile(`serving http://([0-9.:]+)/metrics`))
	start := time.Now()
	var s liveStats
	polls := 0.0
	for i := 0; time.Since(start) < d; i++ {
		time.Sleep(250 * time.Millisecond)
		s.sample(cmd.Process.Pid, time.Since(start), d)
		if i%4 != 3 {
			continue
		}
		t0 := time.Now()
		m := exporttest.Scrape(b, "http://"+addr+"/metrics")
		s.scrapeMax = max(s.scrapeMax, time.Since(t0))
		if s.feedUp == 0 {
			up := 0
			for k, v := range m {
				if strings.HasPrefix(k, "redlockctl_live_feed_up{") && v == 1 {
					up++
				}
			}
			if up == len(e.ms) {
				s.feedUp = time.Since(start)
			}
		}
		if m["redlockctl_polls_total"] == 0 {
			continue
		}
		if d := m["redlockctl_poll_duration_seconds"]; d > 0 {
			if s.pollMin == 0 || d < s.pollMin {
				s.pollMin = d
			}
			s.pollMax = max(s.pollMax, d)
		}
		if s.first == 0 {
			s.first = time.Since(start)
		}
		polls = m["redlockctl_polls_total"]
		for k, v := range m {
			if strings.HasPrefix(k, "redlockctl_master_up{") && v != 1 {
				s.down++
				b.Logf("%s: serve: %s = %v", bin.name, k, v)
			}
		}
		if m["redlockctl_poll_complete"] != 1 {
			s.incomplete++
		}
		if m["redlockctl_poll_slow"] == 1 {
			s.slow++
		}
	}
	s.snapshots = int(polls)
	s.peak = procStatus(cmd.Process.Pid, "VmHWM")
	s.cpu = procCPU(cmd.Process.Pid)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	return s
}

// measureLive runs the console and serve of each binary, interleaved, and prints one
// line per run with the targets.
func (e *e2eSet) measureLive(b *testing.B, consoleTarget, serveTarget string) {
	cfg := e.defaultConfig(b)
	d := liveDuration()
	only := os.Getenv("REDLOCKCTL_BENCH_ONLY")
	var lines []string
	for _, what := range []string{"console", "serve"} {
		if !strings.Contains(what, only) {
			continue
		}
		for _, bin := range e.bins {
			var s liveStats
			target := consoleTarget
			if what == "console" {
				s = e.runConsole(b, bin, cfg, d)
			} else {
				s, target = e.runServe(b, bin, cfg, d), serveTarget
			}
			lines = append(lines, s.line(bin.name+": "+what)+"; target "+target)
			b.Logf("%s", lines[len(lines)-1])
		}
	}
	fmt.Printf("\n%d masters × %d keys, default config, poll interval 1s, %v each\n%s\n", len(e.ms), e.keys, d, strings.Join(lines, "\n"))
}

// BenchmarkConsole runs the console (in tmux) and serve, the built binary, for 60 s
// each on 5 masters × 100k lock keys with a default config. Targets: console peak RSS
// ≤ 150 MiB; no master ever reported down, every snapshot complete.
func BenchmarkConsole(b *testing.B) {
	e := newE2ESet(b, 5, 100_000)
	for range b.N {
		e.measureLive(b, "≤150MiB, no master down, every snapshot complete", "(for reference), no master down, every snapshot complete")
	}
}
