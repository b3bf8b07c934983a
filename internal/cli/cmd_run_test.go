package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/admin/lockrun"
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

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(b, ')')
	return err == nil && i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
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
		{[]string{"run", "job", "--ttl", "soon", "--config", c.config, "--", "true"}, `invalid value "soon" for flag -ttl`},
		{[]string{"run", "job", "--wait", "-1s", "--config", c.config, "--", "true"}, "must not be negative"},
		{[]string{"run", "job", "--grace", "x", "--config", c.config, "--", "true"}, "invalid value"},
		{[]string{"run", "job", "--frob", "--config", c.config, "--", "true"}, "flag provided but not defined: -frob"},
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
		parse := !strings.Contains(tc.args[3], "config") && tc.want != "leaves no validity" && !strings.Contains(tc.want, "read-only")
		if parse && !strings.Contains(errb.String(), "usage: redlockctl run") {
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

// The binary end to end: signals, a lost lock, and the exit codes a script sees.
func TestRunCLIBinarySignalsAndLoss(t *testing.T) {
	bin := buildBinary(t)
	c := newRunCLI(t)
	dir := t.TempDir()
	start := func(head []string, script string) (*exec.Cmd, *bytes.Buffer) {
		t.Helper()
		args := append(append([]string{"run"}, head...), "--config", c.config, "--", "sh", "-c", script)
		cmd := exec.Command(bin, args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		cmd.Env = append(os.Environ(), "D="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd, &errb
	}
	// waitFile waits until the command created file name. A file with content is
	// written under another name and renamed, so that once it is seen it is whole.
	waitFile := func(name string) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%s not created within 10s", name)
			}
		}
	}
	exitOf := func(cmd *exec.Cmd, errb *bytes.Buffer) int {
		t.Helper()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatalf("redlockctl run did not exit\n%s", errb)
		}
		return cmd.ProcessState.ExitCode()
	}

	// SIGTERM to redlockctl reaches the command, which finishes while the lock is
	// still held; then the lock is released and the command's code is the exit code.
	cmd, errb := start([]string{"sig", "--ttl", "1500ms"}, `
trap 'echo "$REDLOCK_VALUE" > "$D/term.tmp"; mv "$D/term.tmp" "$D/term"; sleep 0.5; exit 0' TERM
touch "$D/up"; while :; do sleep 0.05; done`)
	waitFile("up")
	cmd.Process.Signal(syscall.SIGTERM)
	waitFile("term")
	time.Sleep(100 * time.Millisecond)
	b, _ := os.ReadFile(filepath.Join(dir, "term"))
	value := strings.TrimSpace(string(b))
	if value == "" || c.get(t, 0, "sig") != value && c.get(t, 1, "sig") != value {
		t.Fatalf("the lock %q is not held while the command handles SIGTERM", value)
	}
	if code := exitOf(cmd, errb); code != 0 {
		t.Fatalf("after SIGTERM: exit %d, want the command's 0\n%s", code, errb)
	}
	for i := range c.servers {
		if got := c.get(t, i, "sig"); got != "" {
			t.Fatalf("master %d still holds %q after the run", i, got)
		}
	}

	// SIGINT that the command ignores: SIGKILL after --grace, then release.
	cmd, errb = start([]string{"sig", "--ttl", "1500ms", "--grace", "500ms"}, `trap '' INT; touch "$D/up2"; while :; do sleep 0.05; done`)
	waitFile("up2")
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	if code := exitOf(cmd, errb); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("ignored SIGINT: exit %d, want %d\n%s", code, 128+int(syscall.SIGKILL), errb)
	}
	if d := time.Since(sent); d < 450*time.Millisecond {
		t.Fatalf("killed %v after SIGINT, before the grace of 500ms", d)
	}
	if got := c.get(t, 2, "sig"); got != "" {
		t.Fatalf("still held after the killed command: %q", got)
	}

	// redlockctl killed outright: the command dies with it (nobody extends the lock).
	cmd, errb = start([]string{"sig", "--ttl", "1500ms"}, `echo $$ > "$D/pid.tmp"; mv "$D/pid.tmp" "$D/pid"; while :; do sleep 0.05; done`)
	waitFile("pid")
	b, _ = os.ReadFile(filepath.Join(dir, "pid"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	exitOf(cmd, errb)
	for end := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil && !zombie(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the command (pid %d) still runs 5s after redlockctl was killed", pid)
		}
	}

	// A majority of masters dies: the command gets SIGTERM and exits; redlockctl
	// exits with the lost code, not the command's.
	cmd, errb = start([]string{"lost", "--ttl", "1500ms", "--grace", "10s"}, `trap 'exit 0' TERM; touch "$D/up3"; while :; do sleep 0.05; done`)
	waitFile("up3")
	killed := time.Now()
	c.servers[1].Kill()
	c.servers[2].Kill()
	code := exitOf(cmd, errb)
	if code != lockrun.ExitLost || !strings.Contains(errb.String(), `lock "lost" lost while the command ran`) {
		t.Fatalf("lost: exit %d, want %d\n%s", code, lockrun.ExitLost, errb)
	}
	if d := time.Since(killed); d > 5*time.Second {
		t.Fatalf("the run ended %v after the masters died: the command did not get SIGTERM in time", d)
	}
	lines := c.runAuditLines(t)
	if got := runActions(lines); got != "run-acquire,run-release,run-acquire,run-release,run-acquire,run-acquire,run-lost" {
		t.Fatalf("audit actions %s", got)
	}
	if l := lines[6]; *l.RunExit != lockrun.ExitLost || !strings.Contains(l.Error, "lock lost") || *lines[3].RunExit != 137 {
		t.Fatalf("audit lines %+v", lines)
	}
}
