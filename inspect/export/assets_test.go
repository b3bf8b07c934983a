package export

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/inspect"
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

// Every finding code the alert rules and the dashboard name is one the doctor can
// report: a renamed code would leave an alert that never fires.
func TestAssetsNameKnownFindingCodes(t *testing.T) {
	re := regexp.MustCompile(`code=\\?"([a-z-]+)\\?"`)
	named := 0
	for name, b := range map[string][]byte{"alerts.yml": Alerts(), "dashboard.json": Dashboard()} {
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			named++
			if !inspect.KnownCode(m[1]) {
				t.Errorf("%s names finding code %q, which the doctor never reports", name, m[1])
			}
		}
	}
	if named < 3 {
		t.Fatalf("found %d finding codes in the assets; the pattern no longer matches them", named)
	}
}

// The README's scrape config is valid for promtool (with the shipped rules beside it),
// and its alert list names exactly the shipped alerts.
func TestReadmeMonitoring(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: run `make test` (it installs Debian's prometheus package)")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Monitoring\n")
	if !ok {
		t.Fatal("README has no Monitoring section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the Monitoring section has no yaml scrape config")
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"prometheus.yml": []byte(m[1]), "redlockctl-alerts.yml": Alerts()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "config", "prometheus.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS: 8 rules found") {
		t.Errorf("promtool check config on the README's scrape config: %v\n%s", err, out)
	}
	var shipped, listed []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\w+)`).FindAllStringSubmatch(string(Alerts()), -1) {
		shipped = append(shipped, m[1])
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(Redlock\\w+)` \\|").FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(shipped)
	slices.Sort(listed)
	if !slices.Equal(shipped, listed) {
		t.Errorf("README lists alerts %v, the rules ship %v", listed, shipped)
	}
	if !strings.Contains(section, fmt.Sprintf("**%d**", DefaultPort)) {
		t.Errorf("the Monitoring section does not name the default port %d", DefaultPort)
	}
}
