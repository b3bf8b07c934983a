package e2e

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// BenchmarkDump runs `dump -o json` and `dump -o table` (the built binary, the default
// config but for inspect.timeout 5m and max_keys 200k, which the base needs: at
// 57ea69b the timeout bounded the whole poll and max_keys was 100k) on 5 masters ×
// 100k lock keys, beside a plain parallel SCAN of
// the same keys (the floor) and, with REDLOCKCTL_BENCH_BASE, an older binary, all
// interleaved in the same run (the binaries' order alternates by round). It prints,
// per command and binary, the best wall of REDLOCKCTL_BENCH_ROUNDS rounds (default 3)
// against the best SCAN, and the peak RSS of all rounds, as rows of
// docs/benchmarks.md. Targets: peak RSS ≤ 64 MiB, wall no more than the base's.
// `make bench-dump` builds the base from 57ea69b and runs it.
func BenchmarkDump(b *testing.B) {
	for _, shape := range []string{"redlockctl", "redsync"} {
		b.Run(shape, func(b *testing.B) { benchDump(b, shape) })
	}
}

// benchDump is BenchmarkDump on keys whose values have one shape: this project's
// (which the poller parses itself) or redsync's (16 random bytes in base64, which
// every decoder is asked about and one takes by its shape only).
func benchDump(b *testing.B, shape string) {
	e := newE2ESet(b, 5, 100_000)
	if shape == "redsync" {
		for _, m := range e.ms {
			plantRedsync(b, m.Pool, e.keys)
		}
	}
	cmds := []e2eCmd{
		{"dump -o json", "", []string{"dump", "-o", "json"}, checkJSON},
		{"dump -o table", "", []string{"dump", "-o", "table"}, checkTable},
	}
	load := func() string {
		data, _ := os.ReadFile("/proc/loadavg")
		f := strings.Fields(string(data))
		if len(f) < 3 {
			return "?"
		}
		return strings.Join(f[:3], " ")
	}
	for range b.N {
		loadBefore := load()
		e.scan(b) // warm up
		var scans []time.Duration
		walls := map[string][]time.Duration{} // bin \x00 cmd
		rss := map[string]int64{}
		n := rounds(3)
		for r := range n {
			scans = append(scans, e.scan(b))
			bins := slices.Clone(e.bins)
			if r%2 == 1 {
				slices.Reverse(bins)
			}
			for _, c := range cmds {
				for _, bin := range bins {
					args := append([]string{c.args[0], "--config", e.config}, c.args[1:]...)
					res := e.runBin(b, bin.path, args...)
					c.check(b, e, res)
					k := bin.name + "\x00" + c.name
					walls[k] = append(walls[k], res.wall)
					rss[k] = max(rss[k], res.rss)
				}
			}
			b.Logf("round %d done", r+1)
		}
		scan := slices.Min(scans)
		var sb strings.Builder
		fmt.Fprintf(&sb, "\n%s values: %d masters × %d keys, timeout 5m, max_keys 200k, %d rounds interleaved; load average %s before, %s after\n",
			shape, len(e.ms), e.keys, n, loadBefore, load())
		fmt.Fprintf(&sb, "rows for docs/benchmarks.md (best wall of %d; its ratio to the best SCAN; peak RSS of all rounds):\n\n", n)
		names := make([]string, 0, len(e.bins))
		for _, bin := range e.bins {
			name := "redlockctl"
			if bin.name == "base" {
				name = os.Getenv("REDLOCKCTL_BENCH_BASE_NAME")
			}
			names = append(names, name)
		}
		fmt.Fprintf(&sb, "| what (5 masters × 100k keys) | %s | target |\n|---|%s---|\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
		sl, sh := rangeOf(scans)
		scanCells := []string{fmt.Sprintf("%.2f s (%.2f-%.2f s)", scan.Seconds(), sl.Seconds(), sh.Seconds())}
		for range names[1:] {
			scanCells = append(scanCells, "same run")
		}
		fmt.Fprintf(&sb, "| plain parallel SCAN (the floor), %s values | %s | |\n", shape, strings.Join(scanCells, " | "))
		for _, c := range cmds {
			var cells []string
			for _, bin := range e.bins {
				k := bin.name + "\x00" + c.name
				wl, wh := rangeOf(walls[k])
				cells = append(cells, fmt.Sprintf("%.0f MiB; %.2f s (%.2f-%.2f s), %.1f× SCAN", mib(rss[k]), wl.Seconds(), wl.Seconds(), wh.Seconds(), wl.Seconds()/scan.Seconds()))
			}
			fmt.Fprintf(&sb, "| `%s`, %s values | %s | ≤ 64 MiB, wall ≤ the base's |\n", c.name, shape, strings.Join(cells, " | "))
		}
		if len(e.bins) == 2 {
			// The README's rows: this binary beside the base's, in the same run.
			fmt.Fprintf(&sb, "\nrows for README.md:\n\n")
			for _, c := range cmds {
				cur, base := "redlockctl\x00"+c.name, "base\x00"+c.name
				fmt.Fprintf(&sb, "| 100k lock keys each (%s values): `%s`, peak RSS; best wall (%s's in the same run) | %.0f MiB; %.2f s (%.2f s) | ≤ 64 MiB; ≤ %s's | `bench-dump` |\n",
					shape, c.name, names[1], mib(rss[cur]), slices.Min(walls[cur]).Seconds(), slices.Min(walls[base]).Seconds(), names[1])
			}
		}
		fmt.Print(sb.String())
		b.ReportMetric(scan.Seconds(), "scan-s")
	}
}

// plantRedsync replaces the keys "lock:job:"+i (i < n) with redsync-shaped values: 16
// bytes in base64, derived from i, the same on every master.
func plantRedsync(b *testing.B, pool *redis.Pool, n int) {
	c := pool.Get()
	defer c.Close()
	var raw [16]byte
	for i := 0; i < n; {
		j := 0
		for ; j < 5000 && i < n; i, j = i+1, j+1 {
			binary.LittleEndian.PutUint64(raw[:8], uint64(i)*0x9e3779b97f4a7c15)
			binary.LittleEndian.PutUint64(raw[8:], uint64(i))
			c.Send("SET", "lock:job:"+strconv.Itoa(i), base64.StdEncoding.EncodeToString(raw[:]), "PX", time.Hour.Milliseconds())
		}
		if err := c.Flush(); err != nil {
			b.Fatal(err)
		}
		for ; j > 0; j-- {
			if _, err := c.Receive(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
