package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/admin"
)

// newRunCLI is newAdminCLI with a node timeout that leaves room for a loaded machine
// (a run makes a single attempt: a master slow to answer makes it fail).
func newRunCLI(t *testing.T) *adminCLI {
	t.Helper()
	c := newAdminCLI(t, 3)
	b, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(string(b), `node_timeout = "200ms"`, `node_timeout = "500ms"`, 1)
	if conf == string(b) {
		t.Fatal("the admin CLI config has no node_timeout to raise")
	}
	if err := os.WriteFile(c.config, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// runCmd runs `redlockctl run` in this process: flags go before the "--".
func (c *adminCLI) runCmd(t *testing.T, head []string, command ...string) (int, string, string) {
	t.Helper()
	args := append(append([]string{"run"}, head...), "--config", c.config, "--")
	var out, errb bytes.Buffer
	code := run(append(args, command...), &out, &errb)
	return code, out.String(), errb.String()
}

// runAuditLines reads the audit log (missing: none); each line names every master.
func (c *adminCLI) runAuditLines(t *testing.T) []admin.ActionResult {
	t.Helper()
	return c.readAudit(t, true, len(c.servers))
}

func runActions(lines []admin.ActionResult) string {
	var a []string
	for _, l := range lines {
		a = append(a, l.Action)
	}
	return strings.Join(a, ",")
}

func TestRunCLIExitCodesAndAudit(t *testing.T) {
	c := newRunCLI(t)
	code, out, errs := c.runCmd(t, []string{"cron:report", "--ttl", "2s", "--owner", "cron-1"}, "sh", "-c", `echo "$REDLOCK_RESOURCE $REDLOCK_VALUE"; exit 3`)
	if code != 3 || !strings.HasPrefix(out, "cron:report cron-1#") {
		t.Fatalf("run: exit %d, want the command's 3\n%s%s", code, out, errs)
	}
	value := strings.Fields(out)[1]
	for i := range c.servers {
		if got := c.get(t, i, "cron:report"); got != "" {
			t.Fatalf("master %d still holds %q after the run", i, got)
		}
	}
	// A command killed by a signal: 128+n, as shells say.
	if code, _, errs := c.runCmd(t, []string{"cron:report", "--ttl", "2s"}, "sh", "-c", `kill -TERM $$`); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("self-killed command: exit %d\n%s", code, errs)
	}
	// Not found, not executable: 127, 126, and the lock is released.
	dir := t.TempDir()
	for _, tc := range []struct {
		cmd  string
		want int
	}{{"redlockctl-no-such-cmd", 127}, {filepath.Join(dir, "x"), 127}, {dir, 126}} {
		cmd, want := tc.cmd, tc.want
		code, _, errs := c.runCmd(t, []string{"cron:report", "--ttl", "2s"}, cmd)
		if code != want || !strings.Contains(errs, "cannot run the command") {
			t.Fatalf("%s: exit %d, want %d\n%s", cmd, code, want, errs)
		}
		if got := c.get(t, 1, "cron:report"); got != "" {
			t.Fatalf("%s: the lock is still held: %q", cmd, got)
		}
	}
	// Held elsewhere: exit 1 at once, one line naming the holder's owner.
	c.set(t, 0, "cron:report", "billing-7@host-3#0123456789abcdef0123456789abcdef")
	c.set(t, 2, "cron:report", "billing-7@host-3#0123456789abcdef0123456789abcdef")
	code, out, errs = c.runCmd(t, []string{"cron:report", "--ttl", "2s"}, "sh", "-c", "echo ran")
	if code != 1 || out != "" || errs != "redlockctl run: \"cron:report\" is held by billing-7@host-3 (2 of 3 masters)\n" {
		t.Fatalf("held elsewhere: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
	// A script tells "skipped, held elsewhere" from the command's own failure (flock -E).
	code, _, errs = c.runCmd(t, []string{"cron:report", "--ttl", "2s", "--conflict-exit-code", "0"}, "sh", "-c", "exit 1")
	if code != 0 || !strings.Contains(errs, "is held by billing-7@host-3") {
		t.Fatalf("--conflict-exit-code 0: exit %d\n%s", code, errs)
	}
	if code, _, _ = c.runCmd(t, []string{"cron:report", "--conflict-exit-code", "256"}, "true"); code != exitUsage {
		t.Fatalf("--conflict-exit-code 256: exit %d, want 2", code)
	}

	lines := c.runAuditLines(t)
	want := "run-acquire,run-release,run-acquire,run-release,run-acquire,run-release,run-acquire,run-release,run-acquire,run-release"
	if got := runActions(lines); got != want {
		t.Fatalf("audit actions %s, want %s", got, want)
	}
	acq, rel := lines[0], lines[1]
	if acq.Value != value || acq.Done != 3 || acq.Validity <= 0 || acq.RunExit != nil || acq.Nodes[0].Master != "m1" || acq.Nodes[0].Outcome != "ok" {
		t.Fatalf("run-acquire line %+v", acq)
	}
	if rel.Value != value || rel.Done != 3 || rel.RunExit == nil || *rel.RunExit != 3 || rel.Error != "" {
		t.Fatalf("run-release line %+v", rel)
	}
	if l := lines[5]; *l.RunExit != 127 || !strings.Contains(l.Error, "cannot run") {
		t.Fatalf("release line of a command not found: %+v", l)
	}
}

func TestRunCLIUsageAndReadOnly(t *testing.T) {
	c := newRunCLI(t)
	for _, s := range c.servers {
		if _, err := s.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "job", "--config", c.config, "true"}, "missing -- before the command"},
		{[]string{"run", "job", "--config", c.config, "--"}, "empty command"},
		{[]string{"run", "--config", c.config, "--", "true"}, "missing RESOURCE"},
		{[]string{"run", "a", "b", "--config", c.config, "--", "true"}, "one RESOURCE expected"},
		{[]string{"run", "job", "--ttl", "soon", "--config", c.config, "--", "true"}, `invalid argument "soon" for "--ttl" flag`},
		{[]string{"run", "job", "--wait", "-1s", "--config", c.config, "--", "true"}, "must not be negative"},
		{[]string{"run", "job", "--grace", "x", "--config", c.config, "--", "true"}, `invalid argument "x" for "--grace" flag`},
		{[]string{"run", "job", "--frob", "--config", c.config, "--", "true"}, "unknown flag: --frob"},
		{[]string{"run", "job", "--ttl", "1ms", "--config", c.config, "--", "true"}, "leaves no validity"},
		{[]string{"run", "job", "--owner", "two words", "--config", c.config, "--", "true"}, "owner must not contain spaces"},
		{[]string{"run", "job:fence", "--config", c.config, "--", "true"}, "fence counters"},
		{[]string{"run", "job", "--read-only", "--config", c.config, "--", "touch", filepath.Join(t.TempDir(), "ran")}, "refused: read-only"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("%v: exit %d, want 2 with %q\n%s", tc.args, code, tc.want, errb.String())
		}
		// A command line cobra cannot parse is followed by the usage --help shows.
		parse := strings.Contains(tc.want, "flag") || strings.Contains(tc.want, "RESOURCE") || strings.Contains(tc.want, "command")
		if parse != strings.Contains(errb.String(), "Usage:\n  redlockctl run RESOURCE -- CMD [ARG...] [flags]") {
			t.Fatalf("%v: no usage line\n%s", tc.args, errb.String())
		}
	}
	for i, s := range c.servers {
		info, err := redis.String(s.Do("INFO", "commandstats"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			if strings.HasPrefix(line, "cmdstat_") && name != "info" && name != "auth" && !strings.HasPrefix(name, "config") {
				t.Fatalf("master %d received %q on bad usage or read-only", i, name)
			}
		}
	}
	if lines := c.runAuditLines(t); len(lines) != 0 {
		t.Fatalf("audit lines without a run: %+v", lines)
	}
}
