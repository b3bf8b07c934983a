package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// rcli runs redis-cli against s with args (one command), or with stdin's commands
// when args is empty, and returns its output.
func rcli(t *testing.T, s *redistest.Server, stdin string, args ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(s.Addr, ":")
	cmd := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v: %s", args, err, out)
	}
	return string(out)
}

// metricValue returns the value of the series name{labels} (labels as they appear,
// sorted, e.g. `resource="job:a"`) that u serves, or false.
func metricValue(u, series string) (float64, bool) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(string(body))
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// metricIs is a check for eventually: series is served and ok says so.
func metricIs(u, series string, ok func(float64) bool, want string) func() string {
	return func() string {
		v, found := metricValue(u, series)
		if !found {
			return series + " not served"
		}
		if !ok(v) {
			return fmt.Sprintf("%s = %v, want %s", series, v, want)
		}
		return ""
	}
}

func scans(t *testing.T, s *redistest.Server) int64 {
	return commandStats(t, []*redistest.Server{s})[0]["scan"]
}

// serve keeps its rows from the live feed: with poll_interval an hour, a lock set,
// extended, released and deleted behind its back with redis-cli shows in /metrics
// (only the feed can have told it), without a SCAN; a change made while a master's
// feed was cut is found by the whole read after the gap, counted, logged and fixed;
// then the master is fed again.
func TestServeStateFromTheFeed(t *testing.T) {
	bin := buildBinary(t)
	servers := redistest.StartN(t, 3, redistest.Options{})
	var cfg strings.Builder
	cfg.WriteString("[history]\ndir = \"off\"\n\n[inspect]\nresources = [\"job:a\"]\npoll_interval = \"1h\"\nreconcile_interval = \"1h\"\n")
	for i, s := range servers {
		fmt.Fprintf(&cfg, "\n[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
	}
	serve := exec.Command(bin, "serve", "--config", writeConfig(t, cfg.String()), "--listen", "127.0.0.1:0")
	out := startLogged(t, serve)
	u := "http://" + out.waitFor(t, regexp.MustCompile(`serving http://([0-9.:]+)/metrics`)) + "/metrics"
	is := func(v float64) func(float64) bool { return func(x float64) bool { return x == v } }
	for i := range servers {
		eventually(t, 60*time.Second, "the feed up", metricIs(u, fmt.Sprintf(`redlockctl_live_feed_up{master="m%d"}`, i+1), is(1), "1"))
	}
	all := func(args ...string) {
		for _, s := range servers {
			rcli(t, s, "", args...)
		}
	}
	held := `redlockctl_lock_held{resource="job:a"}`
	validity := `redlockctl_lock_validity_seconds{resource="job:a"}`
	value := "worker-1#0123456789abcdef0123456789abcdef"

	all("SET", "job:a", value, "PX", "60000")
	eventually(t, 30*time.Second, "set", metricIs(u, held, is(1), "1"))
	before := make([]int64, len(servers))
	for i, s := range servers {
		before[i] = scans(t, s)
	}
	all("PEXPIRE", "job:a", "600000")
	eventually(t, 30*time.Second, "extended", metricIs(u, validity, func(v float64) bool { return v > 100 }, "> 100 s"))
	all("EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end", "1", "job:a", value)
	eventually(t, 30*time.Second, "released", metricIs(u, held, is(0), "0"))
	all("SET", "job:a", value, "PX", "60000")
	eventually(t, 30*time.Second, "set again", metricIs(u, held, is(1), "1"))
	all("DEL", "job:a")
	eventually(t, 30*time.Second, "deleted", metricIs(u, held, is(0), "0"))
	for i, s := range servers {
		if n := scans(t, s); n != before[i] {
			t.Errorf("m%d: %d SCANs while serve followed the feed, want none", i+1, n-before[i])
		}
	}

	// A gap on m2: its feed's connections are killed, and a lock is set there before
	// the feed is back.
	rcli(t, servers[1], "CLIENT KILL TYPE pubsub\nSET lock:gap \"g#0123456789abcdef0123456789abcdef\" PX 600000\n")
	missing := `redlockctl_reconcile_mismatches_total{kind="missing",master="m2"}`
	eventually(t, 30*time.Second, "the change made in the gap counted", metricIs(u, missing, is(1), "1"))
	out.waitFor(t, regexp.MustCompile(`(reconcile: master m2: key "lock:gap": missing)`))
	eventually(t, 30*time.Second, "fixed", metricIs(u, `redlockctl_locks{scope="redlock",state="partial"}`, is(1), "1 (lock:gap, on m2 only)"))
	eventually(t, 30*time.Second, "the feed back", metricIs(u, `redlockctl_live_feed_up{master="m2"}`, is(1), "1"))

	// Fed again: a change shows without a SCAN.
	all("SET", "job:a", value, "PX", "60000") // the poll after the feed came up reads whole
	eventually(t, 30*time.Second, "set after the gap", metricIs(u, held, is(1), "1"))
	for i, s := range servers {
		before[i] = scans(t, s)
	}
	all("DEL", "job:a")
	eventually(t, 30*time.Second, "deleted after the gap", metricIs(u, held, is(0), "0"))
	for i, s := range servers {
		if n := scans(t, s); n != before[i] {
			t.Errorf("m%d: %d SCANs after the feed came back, want none", i+1, n-before[i])
		}
	}
	for _, kind := range []string{"gone", "value", "ttl"} {
		if v, _ := metricValue(u, fmt.Sprintf(`redlockctl_reconcile_mismatches_total{kind=%q,master="m2"}`, kind)); v != 0 {
			t.Errorf("m2 %s mismatches %v, want 0", kind, v)
		}
	}
}

// Where the feed cannot run (the ACL refuses CLIENT), serve polls every key every
// poll_interval, as without a feed, and counts no mismatch.
func TestServeDegradedFeedPolls(t *testing.T) {
	bin := buildBinary(t)
	servers := redistest.StartN(t, 3, redistest.Options{Users: []string{"nofeed on >nofeed-pw ~* &* +@all -client"}})
	var cfg strings.Builder
	cfg.WriteString("[history]\ndir = \"off\"\n\n[inspect]\nresources = [\"job:a\"]\npoll_interval = \"300ms\"\n")
	for i, s := range servers {
		fmt.Fprintf(&cfg, "\n[[masters]]\nname = \"m%d\"\naddr = %q\nusername = \"nofeed\"\npassword = \"nofeed-pw\"\n", i+1, s.Addr)
	}
	serve := exec.Command(bin, "serve", "--config", writeConfig(t, cfg.String()), "--listen", "127.0.0.1:0")
	out := startLogged(t, serve)
	u := "http://" + out.waitFor(t, regexp.MustCompile(`serving http://([0-9.:]+)/metrics`)) + "/metrics"
	held := `redlockctl_lock_held{resource="job:a"}`
	is := func(v float64) func(float64) bool { return func(x float64) bool { return x == v } }
	eventually(t, 30*time.Second, "served", metricIs(u, held, is(0), "0"))
	for range 3 {
		for _, s := range servers {
			rcli(t, s, "", "SET", "job:a", "w#0123456789abcdef0123456789abcdef", "PX", "60000")
		}
		eventually(t, 30*time.Second, "set, polled", metricIs(u, held, is(1), "1"))
		for _, s := range servers {
			rcli(t, s, "", "DEL", "job:a")
		}
		eventually(t, 30*time.Second, "deleted, polled", metricIs(u, held, is(0), "0"))
	}
	if v, _ := metricValue(u, `redlockctl_live_feed_up{master="m1"}`); v != 0 {
		t.Errorf("live_feed_up %v with CLIENT refused, want 0", v)
	}
	before := scans(t, servers[0])
	time.Sleep(time.Second)
	if n := scans(t, servers[0]); n <= before {
		t.Errorf("no SCAN in a second of polling a master whose feed is degraded")
	}
	for _, kind := range []string{"missing", "gone", "value", "ttl"} {
		if v, _ := metricValue(u, fmt.Sprintf(`redlockctl_reconcile_mismatches_total{kind=%q,master="m1"}`, kind)); v != 0 {
			t.Errorf("%s mismatches %v while polled, want 0", kind, v)
		}
	}
	if strings.Contains(out.text(), "reconcile:") {
		t.Errorf("a mismatch logged while polled:\n%s", out.text())
	}
}
