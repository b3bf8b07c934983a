package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The soak: serve, `events -o ndjson` and the console (in tmux) run for $SOAK (default
// 2m; `make soak` runs 30m) against five masters (four redis-servers, one of them
// behind the latency proxy, and a Sentinel group), while redsync and this project's
// library take locks side by side (logging every lifecycle themselves, some overrunning
// on purpose), an operator acquires, extends and force-releases through the CLI, and
// the fault schedule (soakFaults) runs over and over. What is checked, continuously and
// at the end, is in the README ("Soak"); the report is written as JSON to $SOAK_REPORT
// (default: the temporary directory) with its Markdown table beside it (.md).
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the soak (make test installs it)")
	}
	bin := buildBinary(t)
	churnBin := buildChurn(t)
	s := newSoak(t, d)
	s.start(bin, churnBin)
	s.runSchedule()
	s.finish()
}

// soakDuration is $SOAK (a Go duration), 2m when unset.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("SOAK")
	if v == "" {
		return 2 * time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute {
		t.Fatalf("SOAK=%q: want a Go duration of at least 1m, like 2m or 30m", v)
	}
	return d
}

// Poll settings of the soak's config: a fault must show, and clear, within two polls
// (soak.bound).
const (
	soakPoll        = time.Second
	soakTimeout     = time.Second
	soakHealthEvery = 5                      // the default: INFO and CONFIG every 5th poll
	soakNodeTimeout = 300 * time.Millisecond // rtt-high from 150 ms: the 200 ms latency shows
	soakSlot        = 13 * time.Second       // one fault per slot, the rest of it to recover
)

// soak is one run: the servers, the processes under test, and what was sampled.
type soak struct {
	t        *testing.T
	d        time.Duration
	begin    time.Time
	warm     time.Time // end of the warm-up
	plain    []*redistest.Server
	proxy    *redistest.Proxy
	group    *redistest.SentinelGroup
	cfg      string
	dir      string
	audit    string
	serveURL string
	serve    *exec.Cmd
	serveLog *logged
	ev       *eventsRun
	tm       *tmuxSession
	conErr   string // the console's stderr file
	conDebug string // the console's debug address
	evDebug  string // events' debug address
	work     chan workResult

	mu       sync.Mutex
	scrapes  []*scrapeSample
	procs    map[string][]procSample
	screens  []screenCheck
	faults   []*faultRun
	admin    []adminAction
	failures []string
	stop     chan struct{}
	sampling sync.WaitGroup
}

// workResult is what one churn workload logged, and its stderr.
type workResult struct {
	lib    string
	recs   []churnRecord
	stderr string
	err    error
}

func newSoak(t *testing.T, d time.Duration) *soak {
	s := &soak{t: t, d: d, procs: map[string][]procSample{}, stop: make(chan struct{}), work: make(chan workResult, 2)}
	s.dir = t.TempDir()
	s.audit = filepath.Join(s.dir, "audit.log")
	debug := redistest.Options{Config: []string{"enable-debug-command yes"}}
	s.plain = redistest.StartN(t, 4, debug)
	s.proxy = s.plain[3].SlowProxy(0)
	s.group = redistest.StartSentinelGroup(t, redistest.SentinelOptions{Node: debug})
	var b strings.Builder
	fmt.Fprintf(&b, "name = \"soak\"\naudit_log = %q\n\n[lock]\nrestart_guard = \"0s\"\nnode_timeout = %q\ndefault_ttl = \"60s\"\n\n", s.audit, soakNodeTimeout)
	fmt.Fprintf(&b, "[inspect]\npatterns = [\"rs:*\", \"rl:*\", \"solo:*\", \"adm:*\"]\npoll_interval = %q\ntimeout = %q\nhealth_every = %d\n\n", soakPoll, soakTimeout, soakHealthEvery)
	for i, a := range s.masterAddrs()[:4] {
		fmt.Fprintf(&b, "[[masters]]\nname = \"m%d\"\naddr = %q\n\n", i+1, a)
	}
	fmt.Fprintf(&b, "[[masters]]\nname = \"m5\"\nsentinels = [%s]\nmaster_name = %q\n", quoteList(s.group.SentinelAddrs()), s.group.Name)
	s.cfg = filepath.Join(s.dir, "config.toml")
	if err := os.WriteFile(s.cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// masterAddrs are the addresses clients use for m1..m4 (m4 through the proxy).
func (s *soak) masterAddrs() []string {
	a := redistest.Addrs(s.plain)
	a[3] = s.proxy.Addr
	return a
}

// server returns the redis-server behind a master's name (m5: the group's master now).
func (s *soak) server(name string) *redistest.Server {
	if name == "m5" {
		return s.group.Master()
	}
	var i int
	fmt.Sscanf(name, "m%d", &i)
	return s.plain[i-1]
}

// start plants the solo rows, starts serve, events, the console and the workloads, and
// the samplers.
func (s *soak) start(bin, churnBin string) {
	t := s.t
	for i := 1; i <= 5; i++ {
		s.plantSolo(fmt.Sprintf("m%d", i))
	}
	s.serve = exec.Command(bin, "serve", "--config", s.cfg, "--listen", "127.0.0.1:0")
	s.serveLog = startLogged(t, s.serve)
	s.serveURL = "http://" + s.serveLog.waitFor(t, regexp.MustCompile(`serving http://([0-9.:]+)/metrics`))
	waitHTTP(t, s.serveURL+"/healthz", s.serveLog)

	s.evDebug = freeAddr(t)
	t.Setenv("REDLOCKCTL_DEBUG_ADDR", s.evDebug)
	s.ev = startEvents(t, s.cfg)
	os.Unsetenv("REDLOCKCTL_DEBUG_ADDR")

	s.conDebug = freeAddr(t)
	s.conErr = filepath.Join(s.dir, "console.stderr")
	s.tm = startTmux(t, fmt.Sprintf("NO_COLOR=1 REDLOCKCTL_DEBUG_ADDR=%s %s --config %s 2>%s", s.conDebug, bin, s.cfg, s.conErr))
	s.tm.waitFor(t, "solo:m1", "quorum 3")
	s.tm.literal(t, "/")
	s.tm.literal(t, "solo:")
	s.tm.keys(t, "Enter")
	s.tm.waitFor(t, `filter "solo:"`)

	addrs := append(s.masterAddrs()[:4], s.group.Name+"@"+strings.Join(s.group.SentinelAddrs(), "+"))
	for _, lib := range []string{"redsync", "redlock"} {
		prefix := map[string]string{"redsync": "rs:", "redlock": "rl:"}[lib]
		args := []string{"-lib", lib, "-addrs", strings.Join(addrs, ","), "-prefix", prefix, "-workers", "2",
			"-hold", "40ms", "-pause", "40ms", "-ttl", "3s", "-duration", (s.d - 10*time.Second).String(),
			"-overrun-every", "25", "-overrun-ttl", "500ms"}
		go func() { s.work <- runWork(churnBin, lib, args) }()
	}
	s.begin = time.Now()
	s.warm = s.begin.Add(max(20*time.Second, s.d/10))
	s.sampling.Add(4)
	go s.sampleMetrics()
	go s.sampleProcs()
	go s.watchConsole()
	go s.adminLoop(bin)
}

// runWork runs one churn workload to its end.
func runWork(bin, lib string, args []string) workResult {
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	r := workResult{lib: lib, stderr: stderr.String(), err: err}
	if err != nil {
		return r
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rec churnRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			r.err = fmt.Errorf("churn output %q: %v", line, err)
			return r
		}
		r.recs = append(r.recs, rec)
	}
	return r
}

// plantSolo sets solo:NAME, a lock only that master holds, for a day.
func (s *soak) plantSolo(name string) {
	key := "solo:" + name
	if _, err := s.server(name).Do("SET", key, "soak-solo:1#0123456789abcdef0123456789abcdef", "PX", 86400000); err != nil {
		s.fail("plant %s on %s: %v", key, name, err)
	}
}

// fail records a failure (reported at the end, with the rest of the report).
func (s *soak) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, fmt.Sprintf(format, args...))
}

// runSchedule runs the fault schedule from the end of the warm-up until the duration's
// last slot, then stops the samplers.
func (s *soak) runSchedule() {
	time.Sleep(time.Until(s.warm))
	end := s.begin.Add(s.d)
	faults := soakFaults(s)
	for cycle := 0; ; cycle++ {
		for _, f := range faults {
			slotEnd := time.Now().Add(soakSlot)
			if slotEnd.After(end) {
				time.Sleep(time.Until(end))
				close(s.stop)
				s.sampling.Wait()
				return
			}
			s.inject(f)
			time.Sleep(time.Until(slotEnd))
		}
	}
}
