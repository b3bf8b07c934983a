package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// runSet is three real masters and a config over them with an audit log, for `run`.
type runSet struct {
	servers []*redistest.Server
	config  string
	audit   string
}

func newRunSet(t *testing.T) *runSet {
	t.Helper()
	c := &runSet{servers: redistest.StartN(t, 3, redistest.Options{})}
	dir := t.TempDir()
	c.audit = filepath.Join(dir, "audit.log")
	var b strings.Builder
	// A node timeout that leaves room for a loaded machine: a run makes a single
	// attempt, and a master slow to answer makes it fail.
	fmt.Fprintf(&b, "name = \"test\"\naudit_log = %q\n[lock]\nrestart_guard = \"0s\"\nnode_timeout = \"500ms\"\nretries = 0\n[inspect]\ntimeout = \"300ms\"\n", c.audit)
	for i, s := range c.servers {
		fmt.Fprintf(&b, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
	}
	c.config = writeConfig(t, b.String())
	return c
}

func (c *runSet) get(t *testing.T, i int, key string) string {
	t.Helper()
	v, err := redis.String(c.servers[i].Do("GET", key))
	if errors.Is(err, redis.ErrNil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on master %d: %v", key, i, err)
	}
	return v
}

// auditLines reads the audit log; every line must be whole.
func (c *runSet) auditLines(t *testing.T) []admin.ActionResult {
	t.Helper()
	b, err := os.ReadFile(c.audit)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var out []admin.ActionResult
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r admin.ActionResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if r.Time.IsZero() || r.Resource == "" || len(r.Nodes) != len(c.servers) {
			t.Fatalf("incomplete audit line: %s", sc.Text())
		}
		out = append(out, r)
	}
	return out
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(b, ')')
	return err == nil && i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// The binary end to end: signals, a lost lock, and the exit codes a script sees.
func TestRunBinarySignalsAndLoss(t *testing.T) {
	bin := buildBinary(t)
	c := newRunSet(t)
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
	lines := c.auditLines(t)
	if got := actions(lines); got != "run-acquire,run-release,run-acquire,run-release,run-acquire,run-acquire,run-lost" {
		t.Fatalf("audit actions %s", got)
	}
	if l := lines[6]; *l.RunExit != lockrun.ExitLost || !strings.Contains(l.Error, "lock lost") || *lines[3].RunExit != 137 {
		t.Fatalf("audit lines %+v", lines)
	}
}

func actions(lines []admin.ActionResult) string {
	var a []string
	for _, l := range lines {
		a = append(a, l.Action)
	}
	return strings.Join(a, ",")
}
