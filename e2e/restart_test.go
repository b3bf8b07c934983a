package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The restart hazard, end to end with the default restart guard: a `run` holds a lock
// on five masters; three restart empty; a second `run` 0.5 s later must not start its
// job while the first job runs. The first run learns of the restart within a probe
// and stops its job (exit 75). The truth is the jobs' own log of when they ran.
func TestRestartedMajorityNeverTwoJobs(t *testing.T) {
	ms := redistest.StartN(t, 5, redistest.Options{})
	dir := t.TempDir()
	jobLog := filepath.Join(dir, "jobs.log")
	cfg := fmt.Sprintf("audit_log = %q\n[lock]\nnode_timeout = \"300ms\"\nretries = 0\n", filepath.Join(dir, "audit.log"))
	for i, m := range ms {
		cfg += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
	}
	path := writeConfig(t, cfg)
	time.Sleep(3100 * time.Millisecond) // the masters' uptime passes the guard (the 3 s TTL)
	// Each job logs "<name> start|end <unix ns>" itself; SIGTERM ends it with "end".
	job := func(name string) []string {
		return []string{"sh", "-c", fmt.Sprintf(`log() { echo "%s $1 $(date +%%s%%N)" >> %q; }
trap 'log end; exit 0' TERM; log start; i=0; while [ $i -lt 60 ]; do sleep 0.1; i=$((i+1)); done; log end`, name, jobLog)}
	}
	first := exec.Command(buildBinary(t), append([]string{"run", "job", "--ttl", "3s", "--grace", "2s", "--config", path, "--"}, job("first")...)...)
	firstOut := startLogged(t, first)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(jobLog); strings.Contains(string(b), "first start") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the first job did not start:\n%s", firstOut.text())
		}
	}
	time.Sleep(300 * time.Millisecond)
	for _, m := range ms[:3] {
		m.Restart(false)
	}
	time.Sleep(500 * time.Millisecond)
	second := exec.Command(buildBinary(t), append([]string{"run", "job", "--ttl", "3s", "--config", path, "--"}, job("second")...)...)
	secondOut, _ := second.CombinedOutput()
	first.Wait()
	if code := first.ProcessState.ExitCode(); code != 75 {
		t.Errorf("the first run: exit %d, want 75 (lock lost)\n%s", code, firstOut.text())
	}
	if code := second.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(secondOut), "not counted") {
		t.Errorf("the second run: exit %d, want 1 with the restarted masters not counted\n%s", code, secondOut)
	}
	// From the jobs' own log: no moment when both ran.
	b, _ := os.ReadFile(jobLog)
	spans := map[string][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("job log line %q", line)
		}
		n, _ := strconv.ParseInt(f[2], 10, 64)
		s := spans[f[0]]
		if f[1] == "start" {
			s[0] = n
		} else {
			s[1] = n
		}
		spans[f[0]] = s
	}
	a, s2 := spans["first"], spans["second"]
	if s2[0] != 0 && s2[0] < a[1] {
		t.Errorf("the jobs overlapped: first ran %v..%v, second started at %v\n%s", a[0], a[1], s2[0], b)
	}
	if d := time.Duration(a[1] - a[0]); d > 4*time.Second {
		t.Errorf("the first job ran %v: it was not stopped after the restart", d)
	}
}
