package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/inspect/export"
	"github.com/redlockctl/redlockctl/inspect/report"
)

// formatArgs runs command (one of report.Commands()) with -o name; nothing it runs reaches
// a master before it checks -o (the masters address is never dialled).
func formatArgs(command, name string) []string {
	const masters = "127.0.0.1:1"
	switch command {
	case report.CmdPrintAlerts, report.CmdPrintDashboard:
		return []string{"serve", command, "-o", name}
	case report.CmdAcquire, report.CmdExtend, report.CmdRelease:
		return []string{command, "billing:nightly", "--masters", masters, "-o", name}
	case report.CmdHistory:
		return []string{command, "--since", "1h", "-o", name}
	}
	return []string{command, "--masters", masters, "-o", name}
}

// commandOf is the subcommand that serves command's -o.
func commandOf(command string) string {
	if command == report.CmdPrintAlerts || command == report.CmdPrintDashboard {
		return "serve"
	}
	return command
}

// Every command's -o comes from the table of formats: each format a command takes is
// named in its -o help and completions, and every registered format it does not take
// (and an unknown one) is refused with exit 2 and an error naming the choices.
func TestOutputFormatsFromTheTable(t *testing.T) {
	all := report.Formats()
	if len(all) < 7 {
		t.Fatalf("%d formats registered, want table, json, ndjson, prometheus, rules, prometheusrule and configmap", len(all))
	}
	for _, command := range report.Commands() {
		takes := report.FormatsOf(command)
		if len(takes) < 2 {
			t.Errorf("%s takes %d formats", command, len(takes))
			continue
		}
		code, help, _ := runOut(commandOf(command), "--help")
		_, compl, _ := runOut("__complete", commandOf(command), "-o", "")
		usage := ""
		for _, line := range strings.Split(help, "\n") {
			if strings.Contains(line, "--output") {
				usage = line
			}
		}
		if code != exitOK || usage == "" {
			t.Fatalf("%s --help: exit %d, no -o line:\n%s", commandOf(command), code, help)
		}
		for _, f := range takes {
			word := regexp.MustCompile(`(^|[^a-z])` + f.Name + `([^a-z]|$)`)
			if !word.MatchString(usage) {
				t.Errorf("%s: -o help lacks %s: %q", command, f.Name, usage)
			}
			if !strings.Contains(compl, "\n"+f.Name+"\n") && !strings.HasPrefix(compl, f.Name+"\n") {
				t.Errorf("%s: -o completions lack %s:\n%s", command, f.Name, compl)
			}
		}
		for _, f := range append(all, report.Format{Name: "xml"}) {
			if f.Takes(command) {
				continue
			}
			code, out, errOut := runOut(formatArgs(command, f.Name)...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, f.Name) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and an error naming -o %s", formatArgs(command, f.Name), code, out, errOut, f.Name)
			}
			if !strings.Contains(errOut, report.FormatNames(command)) {
				t.Errorf("%v: stderr %q does not name the choices %q", formatArgs(command, f.Name), errOut, report.FormatNames(command))
			}
		}
	}
}

// An unknown -o for an admin command and for serve's printed files says what it wants,
// exit 2, before anything is sent or printed; the formats they take print.
func TestAdminAndServeOutputErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acquire", "billing:nightly", "--masters", "127.0.0.1:1", "-o", "yaml"}, `redlockctl acquire: -o "yaml": want table or json` + "\n"},
		{[]string{"extend", "billing:nightly", "--value", "v", "--masters", "127.0.0.1:1", "-o", "ndjson"}, `redlockctl extend: -o "ndjson": want table or json` + "\n"},
		{[]string{"release", "billing:nightly", "--force", "--masters", "127.0.0.1:1", "-o", "prometheus"}, `redlockctl release: -o "prometheus": want table or json` + "\n"},
		{[]string{"serve", "--print-alerts", "-o", "yaml"}, `redlockctl serve: --print-alerts -o "yaml": want rules or prometheusrule` + "\n"},
		{[]string{"serve", "--print-dashboard", "-o", "table"}, `redlockctl serve: --print-dashboard -o "table": want json or configmap` + "\n"},
	} {
		code, out, errOut := runOut(c.args...)
		if code != exitUsage || out != "" || errOut != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, %q", c.args, code, out, errOut, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want []byte
	}{
		{[]string{"serve", "--print-alerts"}, export.Alerts()},
		{[]string{"serve", "--print-alerts", "-o", "prometheusrule"}, export.PrometheusRule()},
		{[]string{"serve", "--print-dashboard"}, export.Dashboard()},
		{[]string{"serve", "--print-dashboard", "-o", "configmap"}, export.DashboardConfigMap()},
	} {
		code, out, errOut := runOut(c.args...)
		if code != exitOK || errOut != "" || !bytes.Equal([]byte(out), c.want) {
			t.Errorf("%v: exit %d, %d bytes, stderr %q; want 0 and the %d bytes of the file", c.args, code, len(out), errOut, len(c.want))
		}
	}
}
