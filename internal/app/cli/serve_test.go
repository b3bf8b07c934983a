package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/inspect/export"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// Bad input to serve stops with exit 2 and says what was wrong and where; nothing is
// served.
func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[inspect]\npoll_interval = \"1s\"\npoll_intervall = \"2s\"\n\n[[masters]]\naddr = \"127.0.0.1:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	const masters = "127.0.0.1:1" // never dialled: every case stops before the first poll
	for _, c := range []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"unknown flag", []string{"serve", "--masters", masters, "--listne", ":1"}, []string{"unknown flag: --listne"}},
		{"extra argument", []string{"serve", "--masters", masters, "now"}, []string{`unexpected argument "now"`}},
		{"config error", []string{"serve", "--config", bad}, []string{bad + ":3:", `unknown key "inspect.poll_intervall"`}},
		{"missing config", []string{"serve", "--config", filepath.Join(dir, "nope.toml")}, []string{"nope.toml"}},
		{"no port", []string{"serve", "--masters", masters, "--listen", "localhost"}, []string{`--listen "localhost"`, "missing port"}},
		{"bad port", []string{"serve", "--masters", masters, "--listen", "127.0.0.1:99999"}, []string{`--listen "127.0.0.1:99999"`, "invalid port"}},
		{"port taken", []string{"serve", "--masters", masters, "--listen", taken.Addr().String()}, []string{`--listen "` + taken.Addr().String() + `"`, "address already in use"}},
		{"both prints", []string{"serve", "--print-alerts", "--print-dashboard"}, []string{"pass one"}},
		{"alerts as json", []string{"serve", "--print-alerts", "-o", "json"}, []string{`--print-alerts -o "json": want rules or prometheusrule`}},
		{"dashboard as rule", []string{"serve", "--print-dashboard", "--output", "prometheusrule"}, []string{`--print-dashboard -o "prometheusrule": want json or configmap`}},
		{"-o without a print", []string{"serve", "--masters", masters, "-o", "configmap"}, []string{"-o configmap is for --print-alerts or --print-dashboard"}},
		{"dump --watch", []string{"dump", "--masters", masters, "-o", "prometheus", "--watch", "1s"}, []string{"-o prometheus prints one snapshot per run"}},
		{"doctor", []string{"doctor", "--masters", masters, "-o", "prometheus"}, []string{"-o prometheus is for dump"}},
		{"bad -o", []string{"dump", "--masters", masters, "-o", "openmetrics"}, []string{"want table, json, ndjson or prometheus"}},
	} {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", c.name, code, exitUsage, errOut.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, errOut.String())
			}
		}
		if strings.Contains(errOut.String(), "serving http") || strings.Contains(errOut.String(), "panic") {
			t.Errorf("%s: %s", c.name, errOut.String())
		}
	}
}

func TestServePrints(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--print-alerts"}, &out, &errOut); code != exitOK || !bytes.Equal(out.Bytes(), export.Alerts()) {
		t.Errorf("--print-alerts: exit %d, %d bytes, stderr %s", code, out.Len(), errOut.String())
	}
	if !strings.Contains(out.String(), "alert: RedlockSplitLock") {
		t.Errorf("--print-alerts printed no split alert:\n%s", out.String())
	}
	out.Reset()
	var d struct {
		Title  string `json:"title"`
		Panels []any  `json:"panels"`
	}
	if code := run([]string{"serve", "--print-dashboard"}, &out, &errOut); code != exitOK || json.Unmarshal(out.Bytes(), &d) != nil || len(d.Panels) < 10 {
		t.Errorf("--print-dashboard: exit %d, title %q, %d panels", code, d.Title, len(d.Panels))
	}
	for _, c := range []struct {
		args []string
		want []byte
	}{
		{[]string{"--print-alerts", "-o", "rules"}, export.Alerts()},
		{[]string{"--print-alerts", "-o", "prometheusrule"}, export.PrometheusRule()},
		{[]string{"--print-dashboard", "--output", "json"}, export.Dashboard()},
		{[]string{"--print-dashboard", "-o", "configmap"}, export.DashboardConfigMap()},
	} {
		out.Reset()
		if code := run(append([]string{"serve"}, c.args...), &out, &errOut); code != exitOK || !bytes.Equal(out.Bytes(), c.want) {
			t.Errorf("%v: exit %d, %d bytes, want %d; stderr %s", c.args, code, out.Len(), len(c.want), errOut.String())
		}
	}
	if !bytes.Contains(export.PrometheusRule(), []byte("kind: PrometheusRule\n")) || !bytes.Contains(export.DashboardConfigMap(), []byte("grafana_dashboard: \"1\"")) {
		t.Errorf("the Kubernetes forms lack their kind or label")
	}
}

// dump -o prometheus prints the exposition of one poll.
func TestDumpPrometheus(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true})
	hex := "0123456789abcdef0123456789abcdef"
	for _, m := range ms {
		plant(t, m, "SET", "billing:nightly", "web-1:42#"+hex, "PX", 60000)
	}
	plant(t, ms[0], "SET", "deploy:web", "a#"+hex, "PX", 60000)
	plant(t, ms[1], "SET", "deploy:web", "b#"+hex, "PX", 60000)
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	var cfg strings.Builder
	cfg.WriteString("[inspect]\nresources = [\"billing:nightly\", \"reports:daily\"]\n\n")
	for i, a := range redistest.Addrs(ms) {
		cfg.WriteString("[[masters]]\nname = \"m" + string(rune('1'+i)) + "\"\naddr = \"" + a + "\"\n\n")
	}
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := dump(t, "dump", "--config", cfgPath, "-o", "prometheus")
	if code != exitFindings {
		t.Errorf("exit %d, want %d (a split lock); stderr %s", code, exitFindings, errOut)
	}
	for _, want := range []string{
		"redlockctl_up 1\n",
		"redlockctl_masters 3\n",
		`redlockctl_locks{scope="redlock",state="split"} 1` + "\n",
		`redlockctl_locks{scope="redlock",state="held"} 1` + "\n",
		`redlockctl_locks{scope="redlock",state="free"} 1` + "\n",
		`redlockctl_lock_held{resource="billing:nightly"} 1` + "\n",
		`redlockctl_lock_holders{resource="billing:nightly"} 3` + "\n",
		`redlockctl_lock_held{resource="reports:daily"} 0` + "\n",
		`redlockctl_master_up{master="m3"} 1` + "\n",
		"redlockctl_polls_total 1\n",
		"# TYPE redlockctl_master_poll_errors_total counter\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dump -o prometheus lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "deploy:web") || strings.Contains(out, hex) || strings.Contains(out, "127.0.0.1") {
		t.Errorf("an unconfigured resource, a value or an address is exported:\n%s", out)
	}
}

// plant sends one command that sets up a test's keys.
func plant(t *testing.T, s *redistest.Server, cmd string, args ...any) {
	t.Helper()
	if _, err := s.Do(cmd, args...); err != nil {
		t.Fatalf("%s %s: %v", s.Addr, cmd, err)
	}
}
