package export

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var metricName = regexp.MustCompile(`redlockctl_[a-z0-9_]+`)

// Every metric the shipped rules and dashboard use is one the exporter serves.
func TestRulesAndDashboardUseOnlyExportedMetrics(t *testing.T) {
	var d map[string]any
	if err := json.Unmarshal(Dashboard(), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	for what, text := range map[string]string{"alerts.yml": string(Alerts()), "dashboard.json": string(Dashboard())} {
		used := metricName.FindAllString(text, -1)
		if len(used) < 8 {
			t.Errorf("%s uses only %d metric names: the check proves little", what, len(used))
		}
		for _, name := range used {
			if !slices.Contains(Names(), name) {
				t.Errorf("%s uses %s, which the exporter does not serve", what, name)
			}
		}
	}
	// The dashboard shows every metric.
	for _, name := range Names() {
		if !strings.Contains(string(Dashboard()), name) {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
}

// promtool checks the shipped rules and runs their unit tests
// (testdata/alerts_test.yml): every alert fires on its fault and not without it.
func TestPromtoolRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: run `make test` (it installs Debian's prometheus package)")
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"alerts.yml": Alerts(), "alerts_test.yml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else if !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s said no SUCCESS:\n%s", strings.Join(args, " "), out)
		}
	}
	// Every alert of the rules file has a unit test.
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\w+)`).FindAllStringSubmatch(string(Alerts()), -1) {
		if n := strings.Count(string(tests), "alertname: "+m[1]+"\n"); n < 2 {
			t.Errorf("alert %s has %d promtool test cases, want one firing and one not", m[1], n)
		}
	}
}
