package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// BenchmarkWatchLoad measures what the console and `dump --watch 1s` (the built
// binary, the default config but for [history] dir = "off") cost the masters they
// watch, with their live feed (rows from the feed) and with --no-live (every key read
// every poll), in the same run: 5 masters × REDLOCKCTL_BENCH_KEYS (100k) lock keys that
// do not change, the masters' CPU (INFO cpu) over REDLOCKCTL_BENCH_FOR (20s) beyond the
// same fleet idle, once each command has settled (15 s: its first poll, the feed's
// first whole reads). The console runs in tmux (120×40); dump writes ndjson through a
// filter no row matches (its rows are still built and judged).
func BenchmarkWatchLoad(b *testing.B) {
	keys := 100_000
	if v, err := strconv.Atoi(os.Getenv("REDLOCKCTL_BENCH_KEYS")); err == nil && v > 0 {
		keys = v
	}
	window := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("REDLOCKCTL_BENCH_FOR")); err == nil && d > 0 {
		window = d
	}
	ms := redistest.StartN(b, 5, redistest.Options{})
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { plantKeys(b, m.Pool, keys) })
	}
	wg.Wait()
	cfgPath, bins := serveLoadSetup(b, ms)
	bin := bins[len(bins)-1].path
	type phase struct {
		name  string
		start func() (stop func())
	}
	dump := func(args ...string) func() func() {
		return func() func() {
			cmd := exec.Command(bin, append([]string{"dump", "--config", cfgPath, "--watch", "1s", "-o", "ndjson", "--filter", "no-such-lock"}, args...)...)
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			return func() {
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
			}
		}
	}
	console := func(flags string) func() func() {
		return func() func() {
			tm := startTmux(b, "NO_COLOR=1 "+bin+" --config "+cfgPath+flags)
			return func() {
				tm.literal(b, "q")
				tm.waitFor(b, "exit status")
				tm.run(b, "kill-server")
			}
		}
	}
	phases := []phase{
		{"`dump --watch 1s --no-live`", dump("--no-live")},
		{"`dump --watch 1s`", dump()},
		{"console `--no-live`", console(" --no-live")},
		{"console", console("")},
	}
	for range b.N {
		idle := mastersCPU(b, ms, window)
		b.Logf("idle: the masters spend %.3f CPU-s/s in all", idle)
		var rows []string
		for _, p := range phases {
			stop := p.start()
			time.Sleep(15 * time.Second)
			cpu := mastersCPU(b, ms, window)
			stop()
			b.Logf("%s: the masters spend %.3f CPU-s/s in all", p.name, cpu)
			rows = append(rows, fmt.Sprintf("| %s, 5 × %dk unchanged keys | %.3f CPU-s/s in all beyond idle (%.3f idle) |", p.name, keys/1000, cpu-idle, idle))
		}
		for _, r := range rows {
			b.Log(r)
		}
	}
}
