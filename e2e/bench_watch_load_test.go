package e2e

import (
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

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
	ms, keys, window := loadFleet(b)
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
	var shown []string // the console's: how long a change took to show
	console := func(flags string) func() func() {
		return func() func() {
			tm := startTmux(b, "NO_COLOR=1 "+bin+" --config "+cfgPath+flags)
			return func() {
				show, hide := consoleShows(b, ms, tm)
				shown = append(shown, fmt.Sprintf("console%s: a lock set behind its back shown in %.0f ms median (worst %.0f), deleted in %.0f ms (worst %.0f)",
					flags, median(show), slices.Max(show), median(hide), slices.Max(hide)))
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
		var rows []string
		for _, p := range phases {
			stop := p.start()
			time.Sleep(15 * time.Second)
			cpu := mastersCPU(b, ms, window)
			stop()
			rows = append(rows, fmt.Sprintf("| %s, 5 × %dk unchanged keys | %.3f CPU-s/s in all beyond idle (%.3f idle) |", p.name, keys/1000, cpu-idle, idle))
		}
		for _, r := range rows {
			b.Log(r)
		}
		for _, r := range shown {
			b.Log(r)
		}
	}
}

// consoleShows sets 10 locks on every master behind the console's back (named to sort
// first, so that they are on its screen), one at a time, each deleted again, and
// returns how long each took to show on the screen and to go from it (ms; tmux
// capture-pane every 5 ms).
func consoleShows(b *testing.B, ms []*redistest.Server, tm *tmuxSession) (show, hide []float64) {
	each := func(f func(c redis.Conn)) { onEach(ms, f) }
	wait := func(key string, present bool) float64 {
		t0 := time.Now()
		for strings.Contains(tm.capture(b), key) != present {
			if time.Since(t0) > time.Minute {
				b.Fatalf("%s not shown (present %v) within a minute", key, present)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return float64(time.Since(t0).Microseconds()) / 1000
	}
	for i := range 10 {
		key := fmt.Sprintf("aaa:bench:%d", i)
		time.Sleep(time.Duration(300+37*i%300) * time.Millisecond) // not in step with the polls
		each(func(c redis.Conn) { c.Do("SET", key, "bench#0123456789abcdef0123456789abcdef", "PX", 600000) })
		show = append(show, wait(key, true))
		time.Sleep(time.Duration(250+53*i%300) * time.Millisecond)
		each(func(c redis.Conn) { c.Do("DEL", key) })
		hide = append(hide, wait(key, false))
	}
	return show, hide
}
