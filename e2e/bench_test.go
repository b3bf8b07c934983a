package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The end-to-end benchmarks run the built binary as a user does, against real
// redis-servers holding planted lock keys, and print each figure beside a plain
// parallel SCAN of the same keys (and the in-process poll) measured in the same run.
// Environment knobs:
//
//	REDLOCKCTL_BENCH_BASE=/path/to/redlockctl  also run an older binary, interleaved
//	REDLOCKCTL_BENCH_WATCH=60s                  how long `dump --watch 1s` runs (default 10s)
//	REDLOCKCTL_BENCH_ROUNDS=3                   rounds per command (best and range reported)
//	REDLOCKCTL_BENCH_ONLY=doctor                only the commands whose name contains this
//	                                            (the watch run is named "watch")

// e2eSet is 5 masters with planted keys, the binary, and a config over them.
type e2eSet struct {
	ms     []*redistest.Server
	pools  []*redis.Pool
	cfg    *config.Config
	keys   int // per master
	dir    string
	bins   []e2eBin
	config string // path of the config file
	spawn  *spawner
}

type e2eBin struct{ name, path string }

func newE2ESet(b *testing.B, masters, keys int) *e2eSet {
	b.Helper()
	e := &e2eSet{keys: keys, dir: b.TempDir(), spawn: startSpawner(b)}
	e.bins = []e2eBin{{"redlockctl", buildBinary(b)}}
	if base := os.Getenv("REDLOCKCTL_BENCH_BASE"); base != "" {
		e.bins = append(e.bins, e2eBin{"base", base})
	}
	e.ms = redistest.StartN(b, masters, redistest.Options{})
	start := time.Now()
	var wg sync.WaitGroup
	for _, m := range e.ms {
		wg.Go(func() { plantKeys(b, m.Pool, keys) })
	}
	wg.Wait()
	b.Logf("planted %d keys on each of %d masters in %v", keys, masters, time.Since(start).Round(time.Millisecond))
	var cf strings.Builder
	fmt.Fprintf(&cf, "[inspect]\ntimeout = \"5m\"\nmax_keys = %d\n", 2*keys)
	e.cfg = config.Default()
	e.cfg.Inspect.Timeout = 5 * time.Minute
	e.cfg.Inspect.MaxKeys = 2 * keys
	for i, m := range e.ms {
		name := fmt.Sprintf("m%d", i+1)
		fmt.Fprintf(&cf, "\n[[masters]]\nname = %q\naddr = %q\n", name, m.Addr)
		e.cfg.Masters = append(e.cfg.Masters, config.MasterConfig{Name: name, Addr: m.Addr})
	}
	e.config = filepath.Join(e.dir, "config.toml")
	if err := os.WriteFile(e.config, []byte(cf.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	var err error
	if e.pools, err = e.cfg.Pools(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, p := range e.pools {
			p.Close()
		}
	})
	return e
}

// plantKeys writes n lock keys "lock:job:"+i (see redistest.PlantLocks); it may run
// in its own goroutine, so it reports failures with Error.
func plantKeys(b *testing.B, pool *redis.Pool, n int) {
	if err := redistest.PlantLocks(pool, "lock:job:", n, time.Hour); err != nil {
		b.Error(err)
	}
}

// scan SCANs every key on every master concurrently and returns the wall time.
func (e *e2eSet) scan(b *testing.B) time.Duration {
	start := time.Now()
	var total atomic.Int64
	var wg sync.WaitGroup
	for _, p := range e.pools {
		wg.Go(func() {
			c := p.Get()
			defer c.Close()
			n := 0
			for cursor := "0"; ; {
				r, err := redis.Values(c.Do("SCAN", cursor, "MATCH", "*", "COUNT", 1000))
				if err != nil {
					b.Error(err)
					return
				}
				cursor, _ = redis.String(r[0], nil)
				ks, _ := redis.Strings(r[1], nil)
				n += len(ks)
				if cursor == "0" {
					break
				}
			}
			total.Add(int64(n))
		})
	}
	wg.Wait()
	d := time.Since(start)
	if n := int(total.Load()); n != len(e.pools)*e.keys {
		b.Fatalf("SCAN saw %d keys, want %d", n, len(e.pools)*e.keys)
	}
	return d
}

// poll returns the wall time of an in-process poll of a warm poller (its second poll):
// connected, its tables grown, as a poller is in the console, serve and --watch. The
// binaries each start cold, against it.
func (e *e2eSet) poll(b *testing.B) time.Duration {
	p := poll.NewPoller(e.cfg, e.pools)
	defer p.Close()
	var d time.Duration
	for range 2 {
		runtime.GC() // as BenchmarkPoll: the previous snapshot is not this poll's garbage
		start := time.Now()
		s := p.Poll(context.Background())
		d = time.Since(start)
		if !s.Complete || len(s.Resources) != e.keys {
			b.Fatalf("poll: complete %v, %d rows", s.Complete, len(s.Resources))
		}
	}
	debug.FreeOSMemory() // the binaries run next: give the snapshot's memory back
	return d
}

// binRun is one run of the binary.
type binRun struct {
	wall  time.Duration
	rss   int64 // peak RSS, bytes (wait4 rusage)
	out   int64 // bytes written to stdout
	lines int
	last  string // last line of stdout
	code  int
}

// lineCounter counts bytes and lines of a stream and keeps its last line (bounded),
// without holding the stream.
type lineCounter struct {
	n, lines int64
	tail     []byte
	cur      []byte
	onLine   func(time.Time)
}

func (l *lineCounter) Write(p []byte) (int, error) {
	total := len(p)
	l.n += int64(total)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.keep(p)
			break
		}
		l.keep(p[:i])
		l.tail, l.cur = append(l.tail[:0], l.cur...), l.cur[:0]
		l.lines++
		if l.onLine != nil {
			l.onLine(time.Now())
		}
		p = p[i+1:]
	}
	return total, nil
}

// keep appends to the current line, keeping its last 16 KiB.
func (l *lineCounter) keep(p []byte) {
	const limit = 16 << 10
	if len(p) > limit {
		p = p[len(p)-limit:]
	}
	l.cur = append(l.cur, p...)
	if len(l.cur) > 2*limit {
		l.cur = append(l.cur[:0], l.cur[len(l.cur)-limit:]...)
	}
}

// runBin runs bin with args to completion (through the spawner) and measures it.
func (e *e2eSet) runBin(b *testing.B, bin string, args ...string) binRun {
	resp := e.spawn.run(b, spawnReq{Path: bin, Args: args})
	r := binRun{wall: resp.Wall, rss: resp.RSS, out: resp.Out, lines: resp.Lines, last: resp.Last, code: resp.Code}
	if r.code != 0 && r.code != 3 {
		b.Fatalf("%s %v: exit %d: %s; stdout ends %q", bin, args, r.code, resp.Stderr, r.last[max(0, len(r.last)-300):])
	}
	return r
}

// series is the figures of one measured thing over the rounds.
type series struct {
	name   string
	target string
	walls  []time.Duration
	rss    []int64
	ratios []float64 // per round, against that round's SCAN
	polls  []float64 // per round, against that round's poll
}

func (s *series) add(r binRun, scan, poll time.Duration) {
	s.walls = append(s.walls, r.wall)
	s.rss = append(s.rss, r.rss)
	s.ratios = append(s.ratios, r.wall.Seconds()/scan.Seconds())
	if poll > 0 {
		s.polls = append(s.polls, r.wall.Seconds()/poll.Seconds())
	}
}

func rangeOf[T int64 | float64 | time.Duration](v []T) (T, T) { return slices.Min(v), slices.Max(v) }

// median is the middle value of v (the mean of the two middle ones for an even count).
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func (s *series) line() string {
	if len(s.walls) == 0 {
		return ""
	}
	wl, wh := rangeOf(s.walls)
	rl, rh := rangeOf(s.ratios)
	ml, mh := rangeOf(s.rss)
	pol := "      -             "
	if len(s.polls) > 0 {
		pl, ph := rangeOf(s.polls)
		pol = fmt.Sprintf("%5.2f-%-5.2f× (%4.2f)", pl, ph, median(s.polls))
	}
	return fmt.Sprintf("%-34s %6.0f-%-6.0fms %5.2f-%-5.2f× (%4.2f) %s %5.0f-%-5.0fMiB  %s",
		s.name, ms(wl), ms(wh), rl, rh, median(s.ratios), pol, mib(ml), mib(mh), s.target)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func rounds(def int) int {
	if n, err := strconv.Atoi(os.Getenv("REDLOCKCTL_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkEndToEnd runs `dump -o json|ndjson|table`, `dump --only anomalies`,
// `doctor --duration 3s` and `dump --watch 1s` (the built binary) on 5 masters ×
// 100k lock keys, each beside a plain parallel SCAN and the in-process poll of the
// same run. Targets: dump wall ≤ 3× SCAN and ≤ 1.3× poll, peak RSS
// ≤ 150 MiB; poll ≤ 2.5× SCAN; doctor RSS ≤ 150 MiB; watch prints every snapshot
// within its interval with flat RSS.
func BenchmarkEndToEnd(b *testing.B) {
	e := newE2ESet(b, 5, 100_000)
	for range b.N {
		e.measure(b, []e2eCmd{
			{"dump -o json", "≤3× scan, ≤1.3× poll, ≤150MiB", []string{"dump", "-o", "json"}, checkJSON},
			{"dump -o ndjson", "≤3× scan, ≤1.3× poll, ≤150MiB", []string{"dump", "-o", "ndjson"}, checkJSON},
			{"dump -o table", "≤3× scan, ≤1.3× poll, ≤150MiB", []string{"dump", "-o", "table"}, checkTable},
			{"dump --only anomalies -o json", "(for reference)", []string{"dump", "--only", "anomalies", "-o", "json"}, nil},
			{"dump -o prometheus", "(for reference)", []string{"dump", "-o", "prometheus"}, nil},
			{"doctor --duration 3s", "≤150MiB", []string{"doctor", "--duration", "3s"}, nil},
		}, "≤2.5× scan", rounds(3))
		watch := 10 * time.Second
		if d, err := time.ParseDuration(os.Getenv("REDLOCKCTL_BENCH_WATCH")); err == nil && d > 0 {
			watch = d
		}
		if strings.Contains("watch", os.Getenv("REDLOCKCTL_BENCH_ONLY")) {
			for _, bin := range e.bins {
				e.watch(b, bin, time.Second, watch)
			}
		}
	}
}

// e2eCmd is one command line to measure; check validates a run's output.
type e2eCmd struct {
	name, target string
	args         []string
	check        func(b *testing.B, e *e2eSet, r binRun)
}

func checkJSON(b *testing.B, e *e2eSet, r binRun) {
	if r.lines != 1 || !strings.Contains(r.last, fmt.Sprintf(`"resources":%d,`, e.keys)) {
		b.Fatalf("json: %d lines, ending %q", r.lines, r.last[max(0, len(r.last)-200):])
	}
}

func checkTable(b *testing.B, e *e2eSet, r binRun) {
	if !strings.HasPrefix(r.last, fmt.Sprintf("%d resources: %d held", e.keys, e.keys)) {
		b.Fatalf("table: last line %q", r.last)
	}
}

// measure runs SCAN, the poll and every command for each binary, interleaved, for
// rounds() rounds, and prints one line per figure.
func (e *e2eSet) measure(b *testing.B, cmds []e2eCmd, pollTarget string, nrounds int) {
	e.scan(b) // warm up
	scanS := &series{name: "plain parallel SCAN (baseline)"}
	pollS := &series{name: "poll alone (in-process, warm)", target: pollTarget}
	per := map[string]*series{}
	only := os.Getenv("REDLOCKCTL_BENCH_ONLY")
	cmds = slices.DeleteFunc(cmds, func(c e2eCmd) bool { return !strings.Contains(c.name, only) })
	for r := range nrounds {
		scan := e.scan(b)
		poll := e.poll(b)
		scanS.add(binRun{wall: scan}, scan, 0)
		pollS.add(binRun{wall: poll}, scan, 0)
		for _, c := range cmds {
			for _, bin := range e.bins {
				args := append([]string{c.args[0], "--config", e.config}, c.args[1:]...)
				res := e.runBin(b, bin.path, args...)
				if c.check != nil {
					c.check(b, e, res)
				}
				key := bin.name + "\x00" + c.name
				if per[key] == nil {
					per[key] = &series{name: c.name, target: c.target}
					if len(e.bins) > 1 {
						per[key].name = bin.name + ": " + c.name
					}
				}
				per[key].add(res, scan, poll)
			}
		}
		b.Logf("round %d done", r+1)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d masters × %d keys, %d rounds (min-max, median), ratios per round against that round's SCAN / poll\n", len(e.ms), e.keys, nrounds)
	fmt.Fprintf(&sb, "%-34s %15s %20s %20s %15s  %s\n", "what", "wall", "/SCAN", "/poll", "peak RSS", "target")
	fmt.Fprintln(&sb, scanS.line())
	fmt.Fprintln(&sb, pollS.line())
	for _, c := range cmds {
		for _, bin := range e.bins {
			fmt.Fprintln(&sb, per[bin.name+"\x00"+c.name].line())
		}
	}
	fmt.Print(sb.String())
	sl, _ := rangeOf(scanS.walls)
	pl, _ := rangeOf(pollS.walls)
	b.ReportMetric(sl.Seconds(), "scan-s")
	b.ReportMetric(pl.Seconds(), "poll-s")
}

// watch runs `dump --watch interval -o ndjson` for d and reports the snapshots printed
// late, the gaps between snapshots, and the RSS over time (sampled from /proc every
// 500 ms).
func (e *e2eSet) watch(b *testing.B, bin e2eBin, interval, d time.Duration) {
	resp := e.spawn.run(b, spawnReq{Path: bin.path, Args: []string{"dump", "--config", e.config, "--watch", interval.String(), "-o", "ndjson"},
		StopAfter: d, Sample: 500 * time.Millisecond})
	at, samples, peak := resp.LineAt, resp.Samples, resp.RSS
	if len(at) < 2 {
		fmt.Printf("%s: dump --watch %v for %v: %d snapshots: %s\n", bin.name, interval, d, len(at), resp.Stderr)
		return
	}
	// A snapshot is late when it is printed more than an interval after its poll was
	// due. Polls are due every interval from the start, or as soon as the previous
	// snapshot is out when that one took longer (the watch loop's rule); the first one
	// is due at the spawn, so it also carries the process start. The gaps between
	// snapshots are shown too: they also vary with how long each poll took.
	var gaps []time.Duration
	var late []string // "#snapshot: ms after due"
	due, slowest := time.Duration(0), time.Duration(0)
	for i, t := range at {
		if i > 0 {
			gaps = append(gaps, t-at[i-1])
			due = max(due+interval, at[i-1])
		}
		slowest = max(slowest, t-due)
		if t-due > interval {
			late = append(late, fmt.Sprintf("#%d: %.0fms", i+1, ms(t-due)))
		}
	}
	// RSS flat: the highest sample in the first and in the last third of the run.
	third := func(from, to float64) int64 {
		var m int64
		for _, s := range samples {
			if f := float64(s.T) / float64(d); f >= from && f < to {
				m = max(m, s.RSS)
			}
		}
		return m
	}
	gl, gh := rangeOf(gaps)
	fmt.Printf("%s: dump --watch %v -o ndjson for %v: %d snapshots (expected ~%d), %d printed later than an interval after due %v (slowest %.0fms), gaps %.0f-%.0fms; RSS max first third %.0f MiB, last third %.0f MiB, peak %.0f MiB\n",
		bin.name, interval, d, len(at), int(d/interval), len(late), late, ms(slowest), ms(gl), ms(gh), mib(third(0, 1.0/3)), mib(third(2.0/3, 1.01)), mib(peak))
}

// procRSS reads a process's resident set size from /proc (0 if unknown).
func procRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

var _ io.Writer = (*lineCounter)(nil)
