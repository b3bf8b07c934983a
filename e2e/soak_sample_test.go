package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/internal/debugvars"
)

// scrapeSample is one GET /metrics of serve (the series the soak judges), with
// how long it took and what /healthz answered right after.
type scrapeSample struct {
	At      time.Time
	Latency time.Duration
	Health  int
	Err     string
	series  []promSeries
}

type promSeries struct {
	name   string
	labels map[string]string
	value  float64
}

// value returns the first series called name whose labels include the pairs kv.
func (s *scrapeSample) value(name string, kv ...string) (float64, bool) {
	if s == nil {
		return 0, false
	}
outer:
	for _, p := range s.series {
		if p.name != name {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if p.labels[kv[i]] != kv[i+1] {
				continue outer
			}
		}
		return p.value, true
	}
	return 0, false
}

// sum returns the sum of the series called name whose labels include the pairs kv.
func (s *scrapeSample) sum(name string, kv ...string) float64 {
	var total float64
outer:
	for _, p := range s.series {
		if p.name != name {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if p.labels[kv[i]] != kv[i+1] {
				continue outer
			}
		}
		total += p.value
	}
	return total
}

// is says whether the series exists with value v.
func (s *scrapeSample) is(v float64, name string, kv ...string) bool {
	got, ok := s.value(name, kv...)
	return ok && got == v
}

var seriesLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// soakSeries are the series the soak judges (a long run keeps thousands of scrapes).
var soakSeries = map[string]bool{"redlockctl_master_up": true, "redlockctl_live_feed_up": true,
	"redlockctl_live_feed_gaps_total": true, "redlockctl_finding": true, "redlockctl_master_rtt_seconds": true,
	"redlockctl_master_poll_errors_total": true, "redlockctl_reconcile_mismatches_total": true,
	"go_goroutines": true, "go_memstats_sys_bytes": true, "go_memstats_heap_released_bytes": true}

// parseMetrics keeps the soakSeries of a text exposition.
func parseMetrics(text string) []promSeries {
	var out []promSeries
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "redlockctl_") && !strings.HasPrefix(line, "go_") {
			continue
		}
		m := seriesLine.FindStringSubmatch(line)
		if m == nil || !soakSeries[m[1]] {
			continue
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			continue
		}
		p := promSeries{name: m[1], value: v, labels: map[string]string{}}
		for _, l := range labelPair.FindAllStringSubmatch(m[3], -1) {
			p.labels[l[1]] = l[2]
		}
		out = append(out, p)
	}
	return out
}

// sampleMetrics scrapes serve every half second until the soak stops.
func (s *soak) sampleMetrics() {
	defer s.sampling.Done()
	c := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		sc := &scrapeSample{At: time.Now()}
		resp, err := c.Get(s.serveURL + "/metrics")
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			sc.Latency = time.Since(sc.At)
			switch {
			case rerr != nil:
				sc.Err = rerr.Error()
			case resp.StatusCode != 200:
				sc.Err = resp.Status
			default:
				sc.series = parseMetrics(string(b))
			}
		} else {
			sc.Err = err.Error()
		}
		if resp, err := c.Get(s.serveURL + "/healthz"); err == nil {
			sc.Health = resp.StatusCode
			resp.Body.Close()
		}
		s.mu.Lock()
		s.scrapes = append(s.scrapes, sc)
		s.mu.Unlock()
	}
}

// procSample is one process's resident memory, threads and goroutines at a moment.
type procSample struct {
	At         time.Time
	RSSKiB     int64
	AnonKiB    int64 // RssAnon: RSS without the binary's and libraries' file pages
	Threads    int64
	Goroutines int64
	// HeapLiveKiB is the Go heap the last GC marked live (events and the console; 0
	// for serve): what RSS follows, without the collector's slack.
	HeapLiveKiB int64
	// RetainedKiB is what the Go runtime holds from the OS (its Sys less what it
	// returned): serve's from go_memstats_*, the others' from their debug address.
	RetainedKiB int64
}

// sampleProcs samples serve, events and the console every second: RSS and threads from
// /proc, goroutines from serve's go_goroutines and the others' debug address.
func (s *soak) sampleProcs() {
	defer s.sampling.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	consolePID := 0
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		ev, evOK := debugVars(s.evDebug)
		con, conOK := debugVars(s.conDebug)
		if conOK {
			consolePID = con.PID
		}
		s.mu.Lock()
		var serveG, serveRet int64 = -1, 0
		if n := len(s.scrapes); n > 0 {
			if g, ok := s.scrapes[n-1].value("go_goroutines"); ok {
				serveG = int64(g)
			}
			sys, ok1 := s.scrapes[n-1].value("go_memstats_sys_bytes")
			rel, ok2 := s.scrapes[n-1].value("go_memstats_heap_released_bytes")
			if ok1 && ok2 {
				serveRet = int64(sys-rel) >> 10
			}
		}
		s.mu.Unlock()
		now := time.Now()
		for _, p := range []struct {
			name   string
			pid    int
			g      int64
			heapKB int64
			retKB  int64
		}{{"serve", s.serve.Process.Pid, serveG, 0, serveRet},
			{"events", ev.PID, int64(ev.Goroutines), int64(ev.HeapLive >> 10), int64(ev.Retained >> 10)},
			{"console", consolePID, int64(con.Goroutines), int64(con.HeapLive >> 10), int64(con.Retained >> 10)}} {
			if p.pid == 0 || p.name == "events" && !evOK || p.name == "console" && !conOK {
				continue
			}
			st := procStatusFields(p.pid)
			if st["VmRSS"] == 0 {
				continue
			}
			s.mu.Lock()
			s.procs[p.name] = append(s.procs[p.name], procSample{At: now, RSSKiB: st["VmRSS"], AnonKiB: st["RssAnon"],
				Threads: st["Threads"], Goroutines: p.g, HeapLiveKiB: p.heapKB, RetainedKiB: p.retKB})
			s.mu.Unlock()
		}
	}
}

// debugVars reads a process's $REDLOCKCTL_DEBUG_ADDR figures.
func debugVars(addr string) (debugvars.Vars, bool) {
	var v debugvars.Vars
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/debug/vars")
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	return v, json.NewDecoder(resp.Body).Decode(&v) == nil
}

// procStatusFields reads VmRSS, RssAnon (KiB) and Threads of a process from /proc.
func procStatusFields(pid int) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "RssAnon:" || f[0] == "Threads:") {
			out[strings.TrimSuffix(f[0], ":")], _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return out
}

// screenCheck is what one capture of the console showed: masters down, and which
// solo rows.
type screenCheck struct {
	At     time.Time
	Down   []string
	Kinds  []string // the error kind the console gives each master down, e.g. "timeout"
	Solo   map[string]bool
	Screen string // kept when it shows a master down or misses a solo row
}

var masterLine = regexp.MustCompile(`(?m)^(m[1-5]) +\S+ +(up|down|slow)\b(?: +([a-z-]+):)?`)

// watchConsole captures the console's pane every second.
func (s *soak) watchConsole() {
	defer s.sampling.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		out, err := exec.Command("tmux", "-L", s.tm.socket, "capture-pane", "-p", "-t", "main").Output()
		if err != nil {
			s.fail("tmux capture-pane: %v", err)
			continue
		}
		screen := string(out)
		c := screenCheck{At: time.Now(), Solo: map[string]bool{}}
		seen := 0
		for _, m := range masterLine.FindAllStringSubmatch(screen, -1) {
			seen++
			if m[2] == "down" {
				c.Down = append(c.Down, m[1])
				c.Kinds = append(c.Kinds, m[3])
			}
		}
		for i := 1; i <= 5; i++ {
			name := fmt.Sprintf("solo:m%d", i)
			c.Solo[name] = strings.Contains(screen, name)
		}
		if len(c.Down) > 0 || seen != 5 || strings.Count(screen, "solo:m") < 5 {
			c.Screen = screen
		}
		s.mu.Lock()
		s.screens = append(s.screens, c)
		s.mu.Unlock()
	}
}

// adminAction is one CLI admin action of the soak's operator.
type adminAction struct {
	Action   string
	Resource string
	Exit     int
	Stderr   string
}

// adminLoop acquires, extends and force-releases adm:N through the CLI every few
// seconds, as an operator in another terminal would.
func (s *soak) adminLoop(bin string) {
	defer s.sampling.Done()
	for n := 1; ; n++ {
		select {
		case <-s.stop:
			return
		case <-time.After(4 * time.Second):
		}
		res := fmt.Sprintf("adm:%d", n)
		out, a := s.adminRun(bin, "acquire", res, "acquire", res, "--ttl", "60s", "-o", "json")
		var got struct {
			Value string `json:"value"`
		}
		if a.Exit != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Value == "" {
			continue
		}
		time.Sleep(500 * time.Millisecond)
		s.adminRun(bin, "extend", res, "extend", res, "--value", got.Value, "--ttl", "60s")
		time.Sleep(500 * time.Millisecond)
		s.adminRun(bin, "force-release", res, "release", res, "--force", "--yes")
	}
}

// adminRun runs one admin command and records it.
func (s *soak) adminRun(bin, action, res string, args ...string) (string, adminAction) {
	cmd := exec.Command(bin, append(args, "--config", s.cfg)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	a := adminAction{Action: action, Resource: res, Stderr: stderr.String()}
	if err != nil {
		a.Exit = -1
		if ee, ok := err.(*exec.ExitError); ok {
			a.Exit = ee.ExitCode()
		}
	}
	s.mu.Lock()
	s.admin = append(s.admin, a)
	s.mu.Unlock()
	return string(out), a
}
