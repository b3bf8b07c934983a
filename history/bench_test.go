package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redlockctl/redlockctl/history/pgtest"
	"github.com/redlockctl/redlockctl/inspect/live"
)

// The engine benchmarks: `make bench-history` runs them on a store of
// HISTORY_BENCH_N lifecycles (default 1M), generated at 5,000 lifecycles a second
// and kept in HISTORY_BENCH_DIR (default the temporary directory) for the next run.

var benchStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("HISTORY_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// benchPG is the PostgreSQL server of the benchmarks (started on first use,
// stopped by TestMain): its databases outlive each benchmark's runs.
var (
	benchPGOnce sync.Once
	benchPG     *pgtest.Server
	benchPGErr  error
)

func stopBenchPG() {
	if benchPG != nil {
		benchPG.Close()
	}
}

// benchPGPid is the postmaster of the server HISTORY_BENCH_PG_URL names (0: none),
// whose CPU time is read from /proc.
var benchPGPid int

// openPGBench opens a fresh database of the benchmarks' server.
func openPGBench(tb testing.TB) *PG {
	tb.Helper()
	benchPGOnce.Do(func() { benchPG, benchPGErr = pgtest.New() })
	if benchPGErr != nil {
		tb.Fatal(benchPGErr)
	}
	u, err := benchPG.CreateDatabase()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := OpenPG(u, pgtest.Password, PGOptions{MaxAge: 1 << 62, WriteTimeout: time.Minute, QueryTimeout: 10 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// openBench opens engine name's store in dir (postgres: a fresh database).
func openBench(tb testing.TB, name, dir string) Backend {
	if name == "postgres" {
		return openPGBench(tb)
	}
	return openEngine(tb, name, dir)
}

func openEngine(tb testing.TB, name, dir string) *Store {
	tb.Helper()
	var eng engine
	var err error
	switch name {
	case "bbolt":
		eng, err = openBolt(dir, false)
	case "pebble":
		eng, err = openPebble(dir)
	default:
		tb.Fatalf("no engine %q", name)
	}
	if err != nil {
		tb.Fatal(err)
	}
	s, err := newStore(eng, Options{MaxSize: 1 << 40, MaxAge: 1 << 62})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// engines are the embedded engines measured against each other, and PostgreSQL
// (the shared store): a server the benchmark starts, on this machine.
// HISTORY_BENCH_ENGINES (a comma list) runs some of them.
var engines = func() []string {
	all := []string{"bbolt", "pebble", "postgres"}
	if e := os.Getenv("HISTORY_BENCH_ENGINES"); e != "" {
		return strings.Split(e, ",")
	}
	return all
}()

// benchRows are the figures of docs/benchmarks.md's history table, by row and
// engine, printed paste-ready at the end of the run (TestMain).
var (
	benchRowsMu sync.Mutex
	benchRows   = map[string]map[string]string{}
	benchOrder  []string
)

// row sets engine's figure in row what (ignoring the one-iteration probe run).
func row(b *testing.B, engine, what, format string, args ...any) {
	if b.N < 2 {
		return
	}
	benchRowsMu.Lock()
	defer benchRowsMu.Unlock()
	if benchRows[what] == nil {
		benchRows[what] = map[string]string{}
		benchOrder = append(benchOrder, what)
	}
	benchRows[what][engine] = fmt.Sprintf(format, args...)
}

// printBenchRows prints the rows, one column per engine that ran.
func printBenchRows() {
	if len(benchRows) == 0 {
		return
	}
	var cols []string
	for _, e := range []string{"bbolt", "pebble", "postgres"} {
		for _, r := range benchRows {
			if r[e] != "" {
				cols = append(cols, e)
				break
			}
		}
	}
	fmt.Printf("\n| load average %s | %s |\n|---|%s\n", loadAverage(), strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	for _, what := range benchOrder {
		fmt.Printf("| %s |", what)
		for _, c := range cols {
			fmt.Printf(" %s |", cmpOr(benchRows[what][c], "-"))
		}
		fmt.Println()
	}
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// BenchmarkWrite writes one second of the workload (5,000 lifecycles) per op, as a
// Recorder does, and reports the bytes each lifecycle takes on disk.
func BenchmarkWrite(b *testing.B) {
	for _, name := range engines {
		b.Run(name, func(b *testing.B) {
			s := openBench(b, name, b.TempDir())
			defer s.Close()
			w := newWorkload(1, benchStart, 5000)
			secs := make([][]Lifecycle, 16)
			for i := range secs {
				secs[i] = w.second()
			}
			written := 0
			cpu, server := cpuTime(), serverCPU(name)
			b.ResetTimer()
			for i := range b.N {
				batch := secs[i%len(secs)]
				if name == "postgres" && i >= len(secs) {
					// Distinct lifecycles (the store keeps one of each): the
					// workload's seconds again, a period later.
					batch = shifted(batch, time.Duration(i/len(secs))*time.Duration(len(secs))*time.Second)
				}
				if err := s.Write(Batch{Ended: batch}); err != nil {
					b.Fatal(err)
				}
				written += len(batch)
			}
			b.StopTimer()
			b.ReportMetric(float64(written)/b.Elapsed().Seconds(), "lifecycles/s")
			b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			if name == "postgres" {
				b.ReportMetric(float64(serverCPU(name)-server)/1e6/float64(b.N), "server-cpu-ms/op")
			}
			if st, ok := s.(*Store); ok && name == "pebble" {
				st.eng.(*pebbleEngine).db.Flush()
			}
			used, _ := s.Used()
			b.ReportMetric(float64(used)/float64(written), "B/lifecycle")
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 / float64(b.N) }
			row(b, name, "write one second (5,000 lifecycles): wall; CPU here + on the server", "%.0f ms (%.0fk/s); %.0f + %.0f ms",
				ms(b.Elapsed()), float64(written)/b.Elapsed().Seconds()/1000, ms(cpuTime()-cpu), ms(serverCPU(name)-server))
			row(b, name, "bytes per lifecycle on disk (after the writes)", "%.1f", float64(used)/float64(written))
		})
	}
}

// shifted returns ls a duration later, with values of their own.
func shifted(ls []Lifecycle, d time.Duration) []Lifecycle {
	out := slices.Clone(ls)
	for i := range out {
		l := &out[i]
		l.AcquiredAt, l.EndedAt = l.AcquiredAt.Add(d), l.EndedAt.Add(d)
		l.Value = fmt.Sprintf("%s#%d", l.Value, d/time.Second)
	}
	return out
}

// serverCPU is the CPU time the benchmarks' PostgreSQL server has used (0 for the
// embedded engines: their work is in this process).
func serverCPU(name string) time.Duration {
	switch {
	case name != "postgres":
		return 0
	case benchPGPid != 0:
		return pgtest.ProcessCPU(benchPGPid)
	case benchPG != nil:
		return benchPG.CPU()
	}
	return 0
}

var (
	bigMu     sync.Mutex
	bigStores = map[string]Backend{}
)

// bigN is the size of engine name's generated store: HISTORY_BENCH_N, or for
// PostgreSQL HISTORY_BENCH_PG_N (default 1M: it is built anew in each run).
func bigN(name string) int {
	if name == "postgres" {
		if n, err := strconv.Atoi(os.Getenv("HISTORY_BENCH_PG_N")); err == nil && n > 0 {
			return n
		}
		return 1_000_000
	}
	return benchN()
}

// bigStore returns a store of n generated lifecycles (built once, kept on disk;
// PostgreSQL's in the benchmarks' server, built in each run).
func bigStore(b *testing.B, name string, n int) (Backend, time.Time) {
	bigMu.Lock()
	defer bigMu.Unlock()
	end := benchStart.Add(time.Duration(n/5000) * time.Second)
	if s := bigStores[name]; s != nil {
		return s, end
	}
	if name == "postgres" {
		s := pgBigStore(b, n, end)
		bigStores[name] = s
		return s, end
	}
	root := os.Getenv("HISTORY_BENCH_DIR")
	if root == "" {
		root = os.TempDir()
	}
	dir := filepath.Join(root, fmt.Sprintf("redlockctl-history-bench-v2-%s-%d", name, n))
	_, err := os.Stat(filepath.Join(dir, "done"))
	built := err == nil
	if !built {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o700)
	}
	s := openEngine(b, name, dir)
	if !built {
		began := time.Now()
		w := newWorkload(7, benchStart, 5000)
		if err := s.Write(Batch{Marks: []Mark{{Kind: MarkSession, At: benchStart.Add(-time.Hour), To: end.Add(time.Hour)}}}); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n/5000; i++ {
			if err := s.Write(Batch{Ended: w.second()}); err != nil {
				b.Fatal(err)
			}
		}
		if name == "pebble" {
			s.eng.(*pebbleEngine).db.Flush()
		}
		used, _ := s.Used()
		b.Logf("%s: built %d lifecycles in %v: %d bytes, %.1f B/lifecycle", name, n, time.Since(began).Round(time.Second), used, float64(used)/float64(n))
		os.WriteFile(filepath.Join(dir, "done"), nil, 0o600)
	}
	bigStores[name] = s
	return s, end
}

// pgBigStore returns a PostgreSQL store of n generated lifecycles ending by end: in
// the database HISTORY_BENCH_PG_URL names (password in the URL), kept there and
// built only when it holds no store of n; else in a fresh database of the
// benchmarks' server. The rows are the ones Write stores (lifecycleArgs), loaded
// as a bulk load is: COPY into the day partitions, the indexes built after.
func pgBigStore(b *testing.B, n int, end time.Time) *PG {
	var s *PG
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	if u := os.Getenv("HISTORY_BENCH_PG_URL"); u != "" {
		var err error
		if s, err = OpenPG(u, "", PGOptions{MaxAge: 1 << 62, WriteTimeout: time.Hour, QueryTimeout: 10 * time.Minute}); err != nil {
			b.Fatal(err)
		}
		var dir string
		if err := s.pool.QueryRow(ctx, "SELECT setting FROM pg_settings WHERE name = 'data_directory'").Scan(&dir); err != nil {
			b.Fatal(err)
		}
		if pid, err := os.ReadFile(filepath.Join(dir, "postmaster.pid")); err == nil {
			benchPGPid, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pid), "\n", 2)[0]))
		}
		var built int
		s.pool.QueryRow(ctx, "SELECT n FROM redlockctl_bench_built").Scan(&built)
		if built == n {
			return s
		}
		if _, err := s.pool.Exec(ctx, "DROP TABLE IF EXISTS redlockctl_bench_built, redlockctl_lifecycles, redlockctl_open, redlockctl_spans, redlockctl_marks"); err != nil {
			b.Fatal(err)
		}
		s.Close()
		if s, err = OpenPG(u, "", PGOptions{MaxAge: 1 << 62, WriteTimeout: time.Hour, QueryTimeout: 10 * time.Minute}); err != nil {
			b.Fatal(err)
		}
	} else {
		s = openPGBench(b)
	}
	began, cpu, server := time.Now(), cpuTime(), serverCPU("postgres")
	if err := s.Write(Batch{Marks: []Mark{{Kind: MarkSession, At: benchStart.Add(-time.Hour), To: end.Add(time.Hour)}}}); err != nil {
		b.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	exec := func(sql string) {
		if _, err := conn.Exec(ctx, sql); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	exec("DROP INDEX redlockctl_lifecycles_held, redlockctl_lifecycles_resource, redlockctl_lifecycles_key, redlockctl_lifecycles_ends")
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for d := benchStart; d.Before(end); d = d.Add(24 * time.Hour) {
			if _, err := pgCreateDay(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	cols := append(strings.Split(strings.ReplaceAll(strings.ReplaceAll(lifecycleCols, " ", ""), `"`, ""), ","), "class", "writer")
	w := newWorkload(7, benchStart, 5000)
	secs := n / 5000
	for i := 0; i < secs; {
		// A COPY of up to 100 seconds.
		var rows [][]any
		for j := i; j < min(i+100, secs); j++ {
			args := lifecycleArgs(w.second())
			for k := range 5000 {
				r := make([]any, 0, len(args)+1)
				for _, a := range args {
					r = append(r, reflect.ValueOf(a).Index(k).Interface())
				}
				rows = append(rows, append(r, s.writer))
			}
		}
		i = min(i+100, secs)
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"redlockctl_lifecycles"}, cols, pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
	}
	loaded := time.Since(began)
	exec("SET maintenance_work_mem = '256MB'")
	exec(pgSchema)
	exec("VACUUM ANALYZE")
	exec("CREATE TABLE IF NOT EXISTS redlockctl_bench_built (n bigint)")
	exec(fmt.Sprintf("INSERT INTO redlockctl_bench_built VALUES (%d)", n))
	used, _ := s.Used()
	b.Logf("postgres: built %d lifecycles in %v (COPY %v; this process %v CPU, the server %v): %d bytes, %.1f B/lifecycle",
		n, time.Since(began).Round(time.Second), loaded.Round(time.Second), (cpuTime() - cpu).Round(time.Second), (serverCPU("postgres") - server).Round(time.Second), used, float64(used)/float64(n))
	return s
}

// cpuTime is the CPU time the process has used: on a machine others share, the
// figure wall-clock latencies should be read beside.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportLatency reports the p50 and p99 of ds in ms.
func reportLatency(b *testing.B, ds []time.Duration) (p50, p99 float64) {
	slices.Sort(ds)
	p := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / 1e6 }
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	return p(0.50), p(0.99)
}

// BenchmarkAt asks who held what at a random instant of a large store: every holder
// (about 15,000 at 5,000 lifecycles a second), and one resource's.
func BenchmarkAt(b *testing.B) {
	for _, name := range engines {
		n := bigN(name)
		for _, filter := range []string{"all", "resource"} {
			b.Run(name+"/"+filter, func(b *testing.B) {
				s, end := bigStore(b, name, n)
				span := end.Sub(benchStart)
				var sel Select
				ds := make([]time.Duration, 0, b.N)
				holders := 0
				cpu, server := cpuTime(), serverCPU(name)
				b.ResetTimer()
				for i := range b.N {
					t := benchStart.Add(span/10 + time.Duration(uint64(i)*0x9E3779B97F4A7C15%uint64(span*8/10)))
					if filter == "resource" {
						sel.Resources = []string{fmt.Sprintf("billing:job:%d", i%10000)}
					}
					began := time.Now()
					a, err := s.At(sel, t)
					ds = append(ds, time.Since(began))
					if err != nil {
						b.Fatal(err)
					}
					holders += len(a.Holders)
				}
				b.StopTimer()
				c, sc := float64(cpuTime()-cpu)/1e6/float64(b.N), float64(serverCPU(name)-server)/1e6/float64(b.N)
				b.ReportMetric(c, "cpu-ms/op")
				if name == "postgres" {
					b.ReportMetric(sc, "server-cpu-ms/op")
				}
				p50, p99 := reportLatency(b, ds)
				b.ReportMetric(float64(holders)/float64(b.N), "holders")
				row(b, name, "lifecycles in the generated store", "%.3gM", float64(n)/1e6)
				if filter == "resource" {
					row(b, name, "`RESOURCE --at`: CPU here + on the server / p50 / p99 wall (target p99 ≤ 50 ms)", "%.1f + %.1f ms / %.1f ms / %.0f ms", c, sc, p50, p99)
				} else {
					row(b, name, "`--at`, every holder: CPU here + on the server / p99 wall (holders at once)", "%.0f + %.0f ms / %.2f s (%.0fk)", c, sc, p99/1000, float64(holders)/float64(b.N)/1000)
				}
			})
		}
	}
}

// BenchmarkExpiredSince24h lists every expired lifecycle of the last 24 hours (the
// whole store, 1% of it): all of them ("all"), and as `redlockctl history --since
// 24h --expired` asks (Store.Do: at most DefaultLimit, the earliest acquired first).
func BenchmarkExpiredSince24h(b *testing.B) {
	for _, name := range engines {
		n := bigN(name)
		for _, ask := range []string{"all", "command"} {
			b.Run(name+"/"+ask, func(b *testing.B) {
				s, end := bigStore(b, name, n)
				ds := make([]time.Duration, 0, b.N)
				found := 0
				cpu, server := cpuTime(), serverCPU(name)
				b.ResetTimer()
				for range b.N {
					began := time.Now()
					var r Result
					var err error
					if ask == "all" {
						r, err = s.Lifecycles(Filter{Since: end.Add(-24 * time.Hour), Ends: []string{Expired}}, end)
					} else {
						var resp Response
						resp, err = s.Do(Request{Since: end.Add(-24 * time.Hour), Ends: []string{Expired}}, end)
						if resp.Result != nil {
							r = *resp.Result
						}
					}
					ds = append(ds, time.Since(began))
					if err != nil {
						b.Fatal(err)
					}
					found = len(r.Lifecycles)
				}
				b.StopTimer()
				c, sc := float64(cpuTime()-cpu)/1e6/float64(b.N), float64(serverCPU(name)-server)/1e6/float64(b.N)
				b.ReportMetric(c, "cpu-ms/op")
				if name == "postgres" {
					b.ReportMetric(sc, "server-cpu-ms/op")
				}
				_, p99 := reportLatency(b, ds)
				b.ReportMetric(float64(found), "expired")
				what := map[string]string{"all": "every one", "command": "as the command asks it"}[ask]
				row(b, name, "`--since 24h --expired`, "+what+": CPU here + on the server / p99 wall (target ≤ 1 s; expired found)", "%.0f + %.0f ms / %.2f s (%.0fk)", c, sc, p99/1000, float64(found)/1000)
			})
		}
	}
}

// TestEncodedSize reports the bytes a lifecycle takes encoded, before the engine.
func TestEncodedSize(t *testing.T) {
	s := openEngine(t, "bbolt", t.TempDir())
	defer s.Close()
	w := newWorkload(1, benchStart, 5000)
	total, n, blocks := 0, 0, 0
	for range 10 {
		sec := w.second()
		kvs, err := s.encode(sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			total += len(kv.val) + len(kv.key)
			blocks++
		}
		n += len(sec)
	}
	t.Logf("%.1f bytes a lifecycle encoded, %d blocks for %d", float64(total)/float64(n), blocks, n)
	if total/n > 60 {
		t.Errorf("%d bytes a lifecycle encoded: want at most 60, to leave the engine room under 80", total/n)
	}
}

// BenchmarkRecorder is one second of the workload through a Recorder: 5,000
// acquired and 5,000 end events handled, then the second's write. ns/op over 1e9
// is the share of one core that recording 5,000 lifecycles/s takes.
func BenchmarkRecorder(b *testing.B) {
	for _, name := range engines {
		if name == "pebble" {
			continue // the same recorder; the engines' writes are BenchmarkWrite
		}
		b.Run(name, func(b *testing.B) { benchRecorder(b, name) })
	}
}

func benchRecorder(b *testing.B, name string) {
	s := openBench(b, name, b.TempDir())
	defer s.Close()
	c := &clock{benchStart}
	r, err := NewRecorder(s, RecorderOptions{Now: c.now})
	if err != nil {
		b.Fatal(err)
	}
	w := newWorkload(1, benchStart, 5000)
	var secs [][]live.Event
	for range 16 {
		var evs []live.Event
		for _, l := range w.second() {
			evs = append(evs,
				live.Event{At: l.AcquiredAt, Event: live.Acquired, Resource: l.Resource, Key: l.Key, Value: l.Value, Masters: 5, Quorum: 3},
				live.Event{At: l.EndedAt, Event: l.End, Resource: l.Resource, Key: l.Key, Value: l.Value, Owner: l.Owner, Library: l.Library,
					Masters: 5, Quorum: 3, TTLMs: l.TTLMs, MarginMs: l.MarginMs})
		}
		secs = append(secs, evs)
	}
	cpu, server := cpuTime(), serverCPU(name)
	b.ResetTimer()
	for i := range b.N {
		sec := secs[i%len(secs)]
		if name == "postgres" && i >= len(secs) {
			// Distinct lifecycles (the store keeps one of each), a period later.
			d := time.Duration(i/len(secs)) * time.Duration(len(secs)) * time.Second
			sec = slices.Clone(sec)
			for j := range sec {
				sec[j].At = sec[j].At.Add(d)
				sec[j].Value = fmt.Sprintf("%s#%d", sec[j].Value, d/time.Second)
			}
		}
		for j := range sec {
			r.handle(item{ev: &sec[j]})
		}
		c.t = c.t.Add(time.Second)
		if err := r.flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	here, there := float64(cpuTime()-cpu)/1e7/float64(b.N), float64(serverCPU(name)-server)/1e7/float64(b.N)
	b.ReportMetric(here, "%core")
	if name == "postgres" {
		b.ReportMetric(there, "server-%core")
	}
	row(b, name, "recording 5,000 lifecycles/s (the recorder, one second a op): CPU here + on the server, share of a core", "%.1f%% + %.1f%%", here, there)
}
