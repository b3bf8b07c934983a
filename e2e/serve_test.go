package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/export"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// serve end to end: the built binary, as an ACL user that may not write, exports 5
// real masters with planted states (held, split, no-ttl; m4's clock 5 s ahead through
// the clock shim; m5 paused with SIGSTOP) to a real Prometheus scraping every second
// with the shipped alert rules. What Prometheus stored is asserted through its HTTP
// API, the shipped split alert must fire, SIGTERM and SIGINT must stop serve
// cleanly, and the masters must have received no write command.
func TestServeEndToEnd(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed: run `make test` (it installs Debian's prometheus package)")
	}
	bin := buildBinary(t)
	ro := "ro on >ro-secret ~* &* +@all -@write"
	var servers []*redistest.Server
	for i := range 5 {
		servers = append(servers, redistest.Start(t, redistest.Options{Users: []string{ro}, Skew: i == 3}))
	}
	hex := "0123456789abcdef0123456789abcdef"
	held := "billing-worker@host-7#" + hex
	for i, s := range servers {
		mustDo(t, s, "SET", "billing:nightly", held, "PX", 300000)
		v := "ci-1#" + hex
		if i >= 2 {
			v = "ci-2#" + hex
		}
		mustDo(t, s, "SET", "deploy:web", v, "PX", 300000)
	}
	mustDo(t, servers[0], "SET", "legacy:cron", "cron-1#"+hex)
	servers[3].SetClock(5*time.Second, 1)
	servers[4].Pause()
	defer servers[4].Resume()

	var cfg strings.Builder
	cfg.WriteString("name = \"e2e\"\n\n[inspect]\nresources = [\"billing:nightly\", \"deploy:web\", \"reports:daily\"]\npoll_interval = \"500ms\"\ntimeout = \"1s\"\n\n")
	for i, a := range redistest.Addrs(servers) {
		fmt.Fprintf(&cfg, "[[masters]]\nname = \"m%d\"\naddr = %q\nusername = \"ro\"\npassword_env = \"E2E_RO_PASSWORD\"\n\n", i+1, a)
	}
	cfgPath := writeConfig(t, cfg.String())
	dir := filepath.Dir(cfgPath) // Prometheus's files go beside it
	for _, s := range servers[:4] {
		mustDo(t, s, "ACL", "LOG", "RESET")
	}
	before := commandStats(t, servers[:4])
	dirty := dirtyCounts(t, servers[:4])

	serve := exec.Command(bin, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0")
	serve.Env = append(os.Environ(), "E2E_RO_PASSWORD=ro-secret")
	serveErr := startLogged(t, serve)
	addr := serveErr.waitFor(t, regexp.MustCompile(`serving http://([0-9.:]+)/metrics`))

	// A real Prometheus, scraping serve every second, with the shipped rules.
	promAddr := freeAddr(t)
	promCfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: redlockctl
    static_configs:
      - targets: [%q]
`, addr)
	for name, b := range map[string][]byte{"prometheus.yml": []byte(promCfg), "alerts.yml": export.Alerts()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prom := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr, "--log.level=warn")
	promLog := startLogged(t, prom)
	api := "http://" + promAddr
	waitHTTP(t, api+"/-/ready", promLog)

	// What Prometheus stored.
	eventually(t, 90*time.Second, "Prometheus stored the planted states", func() string {
		checks := []struct {
			query string
			ok    func(float64) bool
			want  string
		}{
			{`redlockctl_locks{scope="redlock",state="split"}`, func(v float64) bool { return v == 1 }, "1"},
			{`redlockctl_locks{scope="redlock",state="no_ttl"}`, func(v float64) bool { return v == 1 }, "1"},
			{`redlockctl_master_up{master="m5"}`, func(v float64) bool { return v == 0 }, "0 (paused)"},
			{`redlockctl_master_up{master="m4"}`, func(v float64) bool { return v == 1 }, "1"},
			{`redlockctl_master_clock_offset_seconds{master="m4"}`, func(v float64) bool { return math.Abs(v-5) <= 0.1 }, "5 ± 0.1"},
			{`redlockctl_master_clock_offset_seconds{master="m1"}`, func(v float64) bool { return math.Abs(v) <= 0.1 }, "0 ± 0.1"},
			{`redlockctl_lock_held{resource="billing:nightly"}`, func(v float64) bool { return v == 1 }, "1"},
			{`redlockctl_lock_holders{resource="billing:nightly"}`, func(v float64) bool { return v == 4 }, "4"},
			{`redlockctl_lock_held{resource="deploy:web"}`, func(v float64) bool { return v == 0 }, "0"},
			{`redlockctl_up`, func(v float64) bool { return v == 1 }, "1"},
			{`redlockctl_master_poll_errors_total{master="m5"}`, func(v float64) bool { return v >= 1 }, ">= 1"},
			{`redlockctl_finding{code="down",master="m5"}`, func(v float64) bool { return v == 1 }, "1"},
		}
		for _, c := range checks {
			v, ok := promValue(t, api, c.query)
			if !ok || !c.ok(v) {
				return fmt.Sprintf("%s = %v (stored: %v), want %s", c.query, v, ok, c.want)
			}
		}
		return ""
	})
	if n := promCount(t, api, `count({__name__=~"redlockctl_lock_.*", resource="legacy:cron"})`); n != 0 {
		t.Errorf("an unconfigured resource has %v series", n)
	}
	if n := promCount(t, api, `count(redlockctl_master_clock_drift_ratio)`); n > 4 {
		t.Errorf("%v drift ratio series for 4 masters up", n)
	}

	// The shipped split alert fires (for: 15s).
	eventually(t, 90*time.Second, "RedlockSplitLock fires", func() string {
		var resp struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		getJSON(t, api+"/api/v1/alerts", &resp)
		var seen []string
		for _, a := range resp.Data.Alerts {
			if a.Labels["alertname"] == "RedlockSplitLock" && a.State == "firing" {
				return ""
			}
			seen = append(seen, a.Labels["alertname"]+"/"+a.State)
		}
		return fmt.Sprintf("alerts: %v", seen)
	})

	// SIGTERM: serve stops cleanly, by itself.
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v; stderr:\n%s", err, serveErr.text())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30s of SIGTERM; stderr:\n%s", serveErr.text())
	}
	// The exit is seen before the last line is read from the pipe: wait for it.
	eventually(t, 5*time.Second, "serve says it stopped", func() string {
		if !strings.Contains(serveErr.text(), "redlockctl serve: stopped") {
			return serveErr.text()
		}
		return ""
	})
	if strings.Contains(serveErr.text(), "ro-secret") {
		t.Errorf("serve printed the password:\n%s", serveErr.text())
	}
	// SIGINT (Ctrl-C) stops it the same way, right after it started.
	again := exec.Command(bin, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0")
	again.Env = serve.Env
	againErr := startLogged(t, again)
	againErr.waitFor(t, regexp.MustCompile(`serving (http)://`))
	if err := again.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() { exited <- again.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve after SIGINT: %v; output:\n%s", err, againErr.text())
		}
		eventually(t, 5*time.Second, "serve says it stopped after SIGINT", func() string {
			if !strings.Contains(againErr.text(), "redlockctl serve: stopped") {
				return againErr.text()
			}
			return ""
		})
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30s of SIGINT; output:\n%s", againErr.text())
	}

	// Read-only: no write command reached a master, no data changed, and the ACL
	// (which refuses writes to "ro") logged no refused command.
	after := commandStats(t, servers[:4])
	if got := dirtyCounts(t, servers[:4]); !slices.Equal(got, dirty) {
		t.Errorf("data changed on the masters while serve ran: changes since save %v -> %v", dirty, got)
	}
	for i, s := range servers[:4] {
		if log, err := redis.Values(s.Do("ACL", "LOG")); err != nil || len(log) != 0 {
			t.Errorf("m%d: ACL LOG has %d refused command(s) (%v): serve attempted a write", i+1, len(log), err)
		}
		for cmd, n := range after[i] {
			if n > before[i][cmd] && isWrite(t, s, cmd) {
				t.Errorf("m%d received %d %s command(s) from serve", i+1, n-before[i][cmd], cmd)
			}
		}
		if after[i]["scan"] <= before[i]["scan"] {
			t.Errorf("m%d saw no SCAN either: the check proves nothing", i+1)
		}
	}
}
