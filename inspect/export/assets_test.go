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
			for _, suffix := range []string{"_bucket", "_sum", "_count"} { // a histogram's series
				if base := strings.TrimSuffix(name, suffix); base != name && slices.Contains(Names(), base) {
					name = base
				}
			}
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

// Every alert has a summary, a description that says what to run, and a runbook_url
// pointing at a section of docs/runbooks.md that says what it means, how to confirm
// it, what to do and what not to do.
func TestAlertsHaveRunbooks(t *testing.T) {
	runbooks, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules := regexp.MustCompile(`(?m)^      - alert: `).Split(string(Alerts()), -1)[1:]
	if len(rules) < 10 {
		t.Fatalf("%d alerts", len(rules))
	}
	const base = "https://github.com/redlockctl/redlockctl/blob/main/docs/runbooks.md#"
	for _, r := range rules {
		name, _, _ := strings.Cut(r, "\n")
		if !strings.Contains(r, "summary: ") || !strings.Contains(r, "description: ") || !strings.Contains(r, "runbook_url: "+base+strings.ToLower(name)+"\n") {
			t.Errorf("alert %s lacks a summary, a description or its runbook_url", name)
		}
		if name != "RedlockEvictingPolicy" && !strings.Contains(r, "`redlockctl ") && !strings.Contains(r, "`curl ") {
			t.Errorf("alert %s does not say what to run", name)
		}
		_, section, ok := strings.Cut(string(runbooks), "\n## "+name+"\n")
		section, _, _ = strings.Cut(section, "\n## ")
		for _, part := range []string{"**Means:**", "**Confirm:**", "**Do:**", "**Don't:**"} {
			if !ok || !strings.Contains(section, part) {
				t.Errorf("docs/runbooks.md has no %s for %s", part, name)
			}
		}
	}
}

// The dashboard picks its data source from a variable and lets Grafana choose rate
// windows ($__rate_interval), so it works at any scrape interval.
func TestDashboardPortable(t *testing.T) {
	var d struct {
		Templating struct {
			List []struct{ Name, Type string }
		}
		Panels []struct {
			Title      string
			Datasource struct{ UID string }
			Targets    []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(Dashboard(), &d); err != nil {
		t.Fatal(err)
	}
	hasVar := false
	for _, v := range d.Templating.List {
		hasVar = hasVar || v.Name == "datasource" && v.Type == "datasource"
	}
	if !hasVar {
		t.Error("the dashboard has no datasource variable")
	}
	ranges := 0
	for _, p := range d.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q uses data source %q", p.Title, p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			for _, m := range regexp.MustCompile(`\[([^\]]+)\]`).FindAllStringSubmatch(tg.Expr, -1) {
				ranges++
				if m[1] != "$__rate_interval" {
					t.Errorf("panel %q uses a fixed range [%s]", p.Title, m[1])
				}
			}
		}
	}
	if ranges < 2 {
		t.Errorf("only %d range selectors: the check proves little", ranges)
	}
}

// The monitoring guide's scrape config is valid for promtool (with the shipped rules
// beside it), and its alert list names exactly the shipped alerts.
func TestMonitoringGuide(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: run `make test` (it installs Debian's prometheus package)")
	}
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(guide)
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("docs/monitoring.md has no yaml scrape config")
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"prometheus.yml": []byte(m[1]), "redlockctl-alerts.yml": Alerts()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "config", "prometheus.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS: 13 rules found") {
		t.Errorf("promtool check config on docs/monitoring.md's scrape config: %v\n%s", err, out)
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
		t.Errorf("docs/monitoring.md lists alerts %v, the rules ship %v", listed, shipped)
	}
	if !strings.Contains(section, fmt.Sprintf("**%d**", DefaultPort)) {
		t.Errorf("docs/monitoring.md does not name the default port %d", DefaultPort)
	}
}
