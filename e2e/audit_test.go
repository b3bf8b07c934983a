package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The audit record comes before the act. A force-release killed with SIGKILL while it
// waits on a paused master has its intent line (each master's command and value) on
// disk; an audit log that cannot be written refuses the release, exit 2, with every key
// left in place.
func TestForceReleaseAuditFirst(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	value := "w:1#0123456789abcdef0123456789abcdef"
	for _, m := range ms {
		mustDo(t, m, "SET", "job", value, "PX", 120000)
	}
	dir := t.TempDir()
	config := func(audit string) string {
		cfg := fmt.Sprintf("audit_log = %q\n[lock]\nrestart_guard = \"0s\"\nnode_timeout = \"20s\"\nretries = 0\n[inspect]\ntimeout = \"2s\"\n", audit)
		for i, m := range ms {
			cfg += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
		}
		return writeConfig(t, cfg)
	}

	// Unwritable: refused before anything is sent.
	code, out, errOut := func() (int, string, string) {
		var o, e strings.Builder
		c := run([]string{"release", "job", "--force", "--yes", "--config", config(filepath.Join(dir, "missing", "audit.log"))}, &o, &e)
		return c, o.String(), e.String()
	}()
	if code != exitUsage || !strings.Contains(errOut, "audit log cannot be written: nothing was sent") {
		t.Fatalf("unwritable audit log: exit %d\n%s%s", code, out, errOut)
	}
	for i, m := range ms {
		if got := m.Get(t, "job"); got != value {
			t.Fatalf("master %d lost the lock although the release was refused: %q", i, got)
		}
	}

	// SIGKILL while the delete waits on a paused master.
	audit := filepath.Join(dir, "audit.log")
	cmd := exec.Command(buildBinary(t), "release", "job", "--force", "--config", config(audit))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := startLogged(t, cmd)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if strings.Contains(stderr.text(), "  m3 ") { // the plan is shown: pause m3, then confirm
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no plan printed:\n%s", stderr.text())
		}
	}
	ms[2].Pause()
	t.Cleanup(ms[2].Resume)
	fmt.Fprintln(stdin, "job")
	for end := time.Now().Add(10 * time.Second); ms[0].Get(t, "job") != "" || ms[1].Get(t, "job") != ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the reachable masters were not released:\n%s", stderr.text())
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatalf("no audit log after SIGKILL mid-release: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var intent admin.ActionResult
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &intent) != nil {
		t.Fatalf("want exactly the intent line, got:\n%s", b)
	}
	if intent.Phase != admin.PhaseIntent || intent.Action != admin.ActionForceRelease || len(intent.Nodes) != 3 {
		t.Fatalf("intent line %+v", intent)
	}
	for _, n := range intent.Nodes {
		if n.Value != value || !strings.Contains(n.Command, "compare-and-delete") || !strings.Contains(n.Command, `value="`+value+`"`) {
			t.Errorf("intent for %s: %+v, want compare-and-delete of %q", n.Master, n, value)
		}
	}
}

// The measured race: the plan shows m1-m4 absent and m5 holding V1; before the operator
// confirms, V1 expires and a new holder takes V3 on every master. --any-value deletes
// only what the plan showed (V1 on m5, now gone), so V3 survives everywhere.
func TestAnyValueDeletesOnlyWhatThePlanShowed(t *testing.T) {
	ms := redistest.StartN(t, 5, redistest.Options{})
	v1 := "old:1#0123456789abcdef0123456789abcdef"
	v3 := "new:3#fedcba9876543210fedcba9876543210"
	mustDo(t, ms[4], "SET", "job", v1, "PX", 120000)
	audit := filepath.Join(t.TempDir(), "audit.log")
	cfg := fmt.Sprintf("audit_log = %q\n", audit)
	for i, m := range ms {
		cfg += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
	}
	cmd := exec.Command(buildBinary(t), "release", "job", "--force", "--any-value", "--config", writeConfig(t, cfg))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := startLogged(t, cmd)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(out.text(), "  m5 "); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no plan:\n%s", out.text())
		}
	}
	mustDo(t, ms[4], "DEL", "job")
	for _, m := range ms {
		mustDo(t, m, "SET", "job", v3, "PX", 120000)
	}
	fmt.Fprintln(stdin, "job")
	cmd.Wait()
	for i, m := range ms {
		if got := m.Get(t, "job"); got != v3 {
			t.Errorf("m%d: %q after the force-release, want the new holder's %q\n%s", i+1, got, v3, out.text())
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != exitFailure {
		t.Errorf("exit %d, want 1 (nothing deleted)\n%s", code, out.text())
	}
	b, _ := os.ReadFile(audit)
	if !strings.Contains(string(b), `{"master":"m5","outcome":"planned","command":"EVAL compare-and-delete: GET \"job\", DEL \"job\" if it holds value=\"`+v1+`\"","value":"`+v1+`"}`) ||
		strings.Contains(string(b), v3) {
		t.Errorf("audit log:\n%s", b)
	}
}
