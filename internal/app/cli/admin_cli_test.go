package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

const adminTestPassword = "pw-Zq81-never-logged"

// adminCLI is n real masters (the first one with a password, given through the
// environment) and a config file over them with an audit log.
type adminCLI struct {
	servers []*redistest.Server
	config  string
	audit   string
}

func newAdminCLI(t *testing.T, n int) *adminCLI {
	t.Helper()
	servers := []*redistest.Server{redistest.Start(t, redistest.Options{Password: adminTestPassword})}
	servers = append(servers, redistest.StartN(t, n-1, redistest.Options{})...)
	t.Setenv("ADMIN_CLI_TEST_PW", adminTestPassword)
	dir := t.TempDir()
	c := &adminCLI{servers: servers, config: filepath.Join(dir, "config.toml"), audit: filepath.Join(dir, "audit.log")}
	var b strings.Builder
	fmt.Fprintf(&b, "name = \"test\"\naudit_log = %q\n[lock]\nrestart_guard = \"0s\"\nnode_timeout = \"200ms\"\nretries = 0\n[inspect]\ntimeout = \"300ms\"\n", c.audit)
	for i, s := range servers {
		fmt.Fprintf(&b, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
		if i == 0 {
			b.WriteString("password_env = \"ADMIN_CLI_TEST_PW\"\n")
		}
	}
	if err := os.WriteFile(c.config, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs one redlockctl command line against the config and returns exit code,
// stdout and stderr.
func (c *adminCLI) run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	adminStdin = strings.NewReader(stdin)
	defer func() { adminStdin = os.Stdin }()
	var out, errb bytes.Buffer
	code := run(append(args, "--config", c.config), &out, &errb)
	return code, out.String(), errb.String()
}

func (c *adminCLI) get(t *testing.T, i int, key string) string {
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

func (c *adminCLI) set(t *testing.T, i int, key, value string) {
	t.Helper()
	if _, err := c.servers[i].Do("SET", key, value, "PX", 60000); err != nil {
		t.Fatal(err)
	}
}

// auditLog reads the audit log, which must exist; every line must be complete and
// carry no password.
func (c *adminCLI) auditLog(t *testing.T) []admin.ActionResult {
	t.Helper()
	return c.readAudit(t, false, 0)
}

// readAudit reads and checks the audit log. A missing log is no lines when missingOK;
// wantNodes > 0 asks every line for exactly that many per-master outcomes (0: at least one).
func (c *adminCLI) readAudit(t *testing.T, missingOK bool, wantNodes int) []admin.ActionResult {
	t.Helper()
	b, err := os.ReadFile(c.audit)
	if missingOK && os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	if bytes.Contains(b, []byte(adminTestPassword)) {
		t.Fatalf("the audit log contains the password:\n%s", b)
	}
	var out []admin.ActionResult
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r admin.ActionResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if r.Phase == admin.PhaseIntent {
			continue // checked in admin's tests: each outcome follows its intent
		}
		nodesOK := len(r.Nodes) > 0 && (wantNodes == 0 || len(r.Nodes) == wantNodes)
		if r.Time.IsZero() || !strings.Contains(r.Operator, "@") || r.Resource == "" || !nodesOK {
			t.Fatalf("incomplete audit line: %s", sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func adminDecode(t *testing.T, s string) admin.ActionResult {
	t.Helper()
	var r admin.ActionResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &r); err != nil {
		t.Fatalf("-o json output %q: %v", s, err)
	}
	return r
}

func TestAdminCLIAcquireExtendRelease(t *testing.T) {
	c := newAdminCLI(t, 3)
	code, out, errs := c.run(t, "", "acquire", "jobs:report", "--ttl", "5s", "--owner", "ops-oncall", "-o", "json")
	if code != exitOK {
		t.Fatalf("acquire: exit %d\n%s%s", code, out, errs)
	}
	r := adminDecode(t, out)
	if r.Action != "acquire" || r.Done != 3 || !strings.HasPrefix(r.Value, "ops-oncall#") || r.Validity <= 0 {
		t.Fatalf("acquire result: %+v", r)
	}
	for i := range c.servers {
		if got := c.get(t, i, "jobs:report"); got != r.Value {
			t.Fatalf("master %d holds %q, want %q", i, got, r.Value)
		}
	}
	// A second acquire is refused: exit 1, nothing changed.
	code, out, _ = c.run(t, "", "acquire", "jobs:report", "--ttl", "5s")
	if code != exitFailure || !strings.Contains(out, `not acquired "jobs:report": quorum 2 not reached (0/3 masters said ok`) || strings.Contains(out, "done on") {
		t.Fatalf("second acquire: exit %d\n%s", code, out)
	}
	// Flags before the resource work too.
	code, out, errs = c.run(t, "", "extend", "--ttl", "60s", "--value", r.Value, "jobs:report")
	if code != exitOK || !strings.Contains(out, "extended \"jobs:report\": done on 3/3 masters") {
		t.Fatalf("extend: exit %d\n%s%s", code, out, errs)
	}
	if pttl, _ := redis.Int64(c.servers[1].Do("PTTL", "jobs:report")); pttl < 30000 {
		t.Fatalf("PTTL after extend: %d", pttl)
	}
	code, out, errs = c.run(t, "", "release", "jobs:report", "--value", r.Value, "-o", "json")
	if code != exitOK || adminDecode(t, out).Done != 3 {
		t.Fatalf("release: exit %d\n%s%s", code, out, errs)
	}
	for i := range c.servers {
		if got := c.get(t, i, "jobs:report"); got != "" {
			t.Fatalf("master %d still holds %q", i, got)
		}
	}
	// Releasing a value that is gone: nothing deleted, exit 1.
	code, _, errs = c.run(t, "", "release", "jobs:report", "--value", r.Value)
	if code != exitFailure || !strings.Contains(errs, "nothing deleted") {
		t.Fatalf("release of a gone value: exit %d\n%s", code, errs)
	}
	lines := c.auditLog(t)
	var actions []string
	for _, l := range lines {
		actions = append(actions, l.Action)
	}
	if got := strings.Join(actions, ","); got != "acquire,acquire,extend,release,release" {
		t.Fatalf("audit actions %s", got)
	}
	if lines[0].Value != r.Value || lines[1].Done != 0 || lines[3].Done != 3 || lines[3].Nodes[0].Master != "m1" {
		t.Fatalf("audit lines: %+v", lines)
	}
}

func TestAdminCLIMasterDownAndQuorumDown(t *testing.T) {
	c := newAdminCLI(t, 3)
	c.servers[2].Kill()
	code, out, errs := c.run(t, "", "acquire", "one-down", "--ttl", "5s")
	if code != exitFindings || !strings.Contains(out, "not on every master") {
		t.Fatalf("acquire with one master down: exit %d, want 3\n%s%s", code, out, errs)
	}
	value := c.get(t, 0, "one-down")
	code, _, _ = c.run(t, "", "extend", "one-down", "--value", value, "--ttl", "5s")
	if code != exitFindings {
		t.Fatalf("extend with one master down: exit %d, want 3", code)
	}
	code, _, _ = c.run(t, "", "release", "one-down", "--value", value)
	if code != exitFindings {
		t.Fatalf("release with one master down: exit %d, want 3", code)
	}
	if c.get(t, 0, "one-down") != "" || c.get(t, 1, "one-down") != "" {
		t.Fatal("release left the value on a live master")
	}
	c.servers[1].Kill()
	code, _, errs = c.run(t, "", "acquire", "two-down", "--ttl", "5s")
	if code != exitFailure || c.get(t, 0, "two-down") != "" {
		t.Fatalf("acquire with a quorum down: exit %d, want 1 and nothing left behind\n%s", code, errs)
	}
	c.set(t, 0, "two-down", "x#1")
	code, _, _ = c.run(t, "", "release", "two-down", "--force", "--any-value", "--yes")
	if code != exitFailure {
		t.Fatalf("force-release with a quorum down: exit %d, want 1", code)
	}
	if n := len(c.auditLog(t)); n != 5 {
		t.Fatalf("%d audit lines, want 5", n)
	}
}

func TestAdminCLIForceRelease(t *testing.T) {
	c := newAdminCLI(t, 3)
	// Held by a quorum, with a stray value on the third master.
	c.set(t, 0, "billing", "w1#aa")
	c.set(t, 1, "billing", "w1#aa")
	c.set(t, 2, "billing", "w2#bb")

	// Confirmation refused: nothing deleted.
	code, _, errs := c.run(t, "bill\n", "release", "billing", "--force")
	if code != exitFailure || !strings.Contains(errs, "nothing deleted") {
		t.Fatalf("refused confirmation: exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, `DELETE "w1#aa"`) || !strings.Contains(errs, `keep: other value "w2#bb"`) {
		t.Fatalf("the plan does not say what is deleted where:\n%s", errs)
	}
	if c.get(t, 0, "billing") != "w1#aa" || c.get(t, 2, "billing") != "w2#bb" {
		t.Fatal("a refused confirmation deleted something")
	}
	if _, err := os.Stat(c.audit); !os.IsNotExist(err) {
		t.Fatal("a refused confirmation was audited as an action")
	}
	// Confirmed by typing the name: the quorum value goes, the stray stays.
	code, out, errs := c.run(t, "billing\n", "release", "billing", "--force")
	if code != exitOK || !strings.Contains(out, "force-released") {
		t.Fatalf("confirmed force-release: exit %d\n%s%s", code, out, errs)
	}
	if c.get(t, 0, "billing") != "" || c.get(t, 1, "billing") != "" || c.get(t, 2, "billing") != "w2#bb" {
		t.Fatal("force-release must delete exactly the quorum value")
	}

	// A split: no quorum value. Without --any-value: a clear refusal.
	c.set(t, 0, "split", "a#1")
	c.set(t, 1, "split", "b#2")
	code, _, errs = c.run(t, "", "release", "split", "--force", "--yes")
	if code != exitFailure || !strings.Contains(errs, "no value") || !strings.Contains(errs, "--any-value") {
		t.Fatalf("force on a split without --any-value: exit %d\n%s", code, errs)
	}
	if c.get(t, 0, "split") != "a#1" || c.get(t, 1, "split") != "b#2" {
		t.Fatal("a refused force-release deleted something")
	}
	code, out, errs = c.run(t, "", "release", "split", "--force", "--any-value", "--yes", "-o", "json")
	r := adminDecode(t, out)
	if code != exitOK || r.Action != "force-release-any" || r.Done != 2 {
		t.Fatalf("force --any-value on a split: exit %d %+v\n%s", code, r, errs)
	}
	for i := range c.servers {
		if v := c.get(t, i, "split"); v != "" {
			t.Fatalf("master %d still holds %q", i, v)
		}
	}
	// The table output counts the master that had no key as done, and says so.
	c.set(t, 0, "split2", "a#1")
	c.set(t, 1, "split2", "b#2")
	code, out, errs = c.run(t, "", "release", "split2", "--force", "--any-value", "--yes")
	if code != exitOK || !strings.Contains(out, `done on 3/3 masters (2 deleted, 1 already gone`) {
		t.Fatalf("force --any-value, one master without the key: exit %d\n%s%s", code, out, errs)
	}
	// Nothing there at all.
	code, _, errs = c.run(t, "", "release", "nothing", "--force", "--yes")
	if code != exitFailure || !strings.Contains(errs, "no master holds it") {
		t.Fatalf("force on a free resource: exit %d\n%s", code, errs)
	}
	lines := c.auditLog(t)
	if len(lines) != 3 || lines[0].Action != "force-release" || lines[0].Value != "w1#aa" || lines[1].Action != "force-release-any" || lines[2].Action != "force-release-any" {
		t.Fatalf("audit: %+v", lines)
	}
}

func TestAdminCLIReadOnlySendsNoWrite(t *testing.T) {
	c := newAdminCLI(t, 3)
	c.set(t, 0, "ro", "a#1")
	c.set(t, 1, "ro", "a#1")
	for _, s := range c.servers {
		if _, err := s.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"acquire", "ro2", "--ttl", "5s", "--read-only"},
		{"extend", "ro", "--value", "a#1", "--read-only"},
		{"release", "ro", "--value", "a#1", "--read-only"},
		{"release", "ro", "--force", "--yes", "--read-only"},
		{"release", "ro", "--force", "--any-value", "--yes", "--read-only"},
	} {
		code, _, errs := c.run(t, "ro\n", args...)
		if code != exitUsage || !strings.Contains(errs, "read-only") {
			t.Fatalf("%v: exit %d, want 2 with a read-only message\n%s", args, code, errs)
		}
	}
	for i, s := range c.servers {
		info, err := redis.String(s.Do("INFO", "commandstats"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			if strings.HasPrefix(line, "cmdstat_") && name != "info" && name != "auth" && !strings.HasPrefix(name, "config") { // our own probes
				t.Fatalf("master %d received %q while read-only", i, name)
			}
		}
	}
	if c.get(t, 0, "ro") != "a#1" || c.get(t, 0, "ro2") != "" {
		t.Fatal("data changed while read-only")
	}
}

func TestAdminCLIUsageErrors(t *testing.T) {
	c := newAdminCLI(t, 1)
	for _, args := range [][]string{
		{"acquire"},
		{"acquire", "r", "--bogus"},
		{"acquire", "r", "--ttl", "soon"},
		{"acquire", "r", "s"},
		{"acquire", "r", "-o", "yaml"},
		{"acquire", "r", "--ttl", "5ms"},
		{"extend", "r"},
		{"extend", "r", "--value", "v", "--ttl", "-1s"},
		{"extend", "r", "--value", "v", "--ttl", "500us"},
		{"release", "r"},
		{"release", "r", "--force", "--value", "v"},
		{"release", "r", "--any-value", "--value", "v"},
		{"release", "r", "--yes", "--value", "v"},
	} {
		code, out, errs := c.run(t, "", args...)
		if code != exitUsage || out != "" || errs == "" {
			t.Errorf("%v: exit %d (want 2), stdout %q, stderr %q", args, code, out, errs)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"acquire", "r", "--config", filepath.Join(t.TempDir(), "missing.toml")}, &out, &errb); code != exitUsage {
		t.Errorf("missing config: exit %d, want 2 (%s)", code, errb.String())
	}
	if _, err := os.Stat(c.audit); !os.IsNotExist(err) {
		t.Error("a usage error wrote the audit log")
	}
}

func TestAdminCLIAcquireHoldKeepsAliveThenReleases(t *testing.T) {
	c := newAdminCLI(t, 3)
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := c.run(t, "", "acquire", "held:job", "--ttl", "900ms", "--hold", "--owner", "holder")
		done <- result{code, out, errs}
	}()
	var value string
	for i := 0; i < 200 && value == ""; i++ {
		time.Sleep(10 * time.Millisecond)
		value = c.get(t, 0, "held:job")
	}
	if !strings.HasPrefix(value, "holder#") {
		t.Fatalf("the held lock never appeared (value %q)", value)
	}
	time.Sleep(2 * time.Second) // more than two TTLs: only keep-alive keeps it
	if got := c.get(t, 1, "held:job"); got != value {
		t.Fatalf("after 2s the key holds %q, want the held value %q", got, value)
	}
	r := interrupt(t, done, "acquire --hold")
	if r.code != exitOK || !strings.Contains(r.out, "acquired") || !strings.Contains(r.out, "released \"held:job\": done on 3/3") {
		t.Fatalf("hold: exit %d\n%s%s", r.code, r.out, r.err)
	}
	for i := range c.servers {
		if v := c.get(t, i, "held:job"); v != "" {
			t.Fatalf("master %d still holds %q after the hold ended", i, v)
		}
	}
	lines := c.auditLog(t)
	if len(lines) != 2 || lines[0].Action != "acquire" || lines[1].Action != "release" || lines[1].Value != value {
		t.Fatalf("audit: %+v", lines)
	}
}

func TestAdminCLIAcquireWaitRetriesUntilFree(t *testing.T) {
	c := newAdminCLI(t, 3)
	// One instant of expiry for all three (PXAT): set one after another with PX, the
	// last could outlive the others by a few ms, and a retry landing then would take
	// the lock on a quorum only (exit 3), rightly.
	at := time.Now().Add(400 * time.Millisecond).UnixMilli()
	for i := range c.servers {
		if _, err := c.servers[i].Do("SET", "busy", "other#1", "PXAT", at); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := c.run(t, "", "acquire", "busy", "--ttl", "5s", "--wait", "5s")
	// Each master runs the retry's SET NX on its own: one landing within a millisecond
	// of the instant can still find the old value there, and the lock is taken on a
	// quorum only (exit 3, said per master), rightly. A retry that took it is what this
	// test asks for.
	partial := code == exitFindings && strings.Contains(out, "done on 2/3 masters")
	if code != exitOK && !partial || !strings.Contains(out, "acquired") {
		t.Fatalf("acquire --wait on a lock that expires: exit %d\n%s%s", code, out, errs)
	}
	c.set(t, 0, "busy2", "other#1")
	c.set(t, 1, "busy2", "other#1")
	code, _, _ = c.run(t, "", "acquire", "busy2", "--ttl", "5s", "--wait", "300ms")
	if code != exitFailure {
		t.Fatalf("acquire --wait on a lock held for a minute: exit %d, want 1", code)
	}
}

func TestAdminCLIPausedMasterTimesOut(t *testing.T) {
	c := newAdminCLI(t, 3)
	c.servers[1].Pause()
	defer c.servers[1].Resume()
	code, out, errs := c.run(t, "", "acquire", "paused", "--ttl", "5s", "-o", "json")
	r := adminDecode(t, out)
	if code != exitFindings || r.Done != 2 || r.Up != 2 || r.Nodes[1].Outcome == "ok" {
		t.Fatalf("acquire with a paused master: exit %d %+v\n%s", code, r, errs)
	}
	code, out, errs = c.run(t, "", "release", "paused", "--force", "--yes", "-o", "json")
	r = adminDecode(t, out)
	if code != exitFindings || r.Done != 2 || r.Nodes[1].Outcome != admin.OutcomeUnknown {
		t.Fatalf("force-release with a paused master: exit %d %+v\n%s", code, r, errs)
	}
	if !strings.Contains(errs, "unknown (did not answer, timeout: ") {
		t.Fatalf("the plan does not say the paused master did not answer:\n%s", errs)
	}
}

// On masters started a moment ago (as a new user's first try: --masters, no config),
// acquire and run say which masters restarted, how long ago, for how much longer they
// are not counted, and the two ways out; no master is blamed for a timeout; and
// --restart-guard 0s takes the lock.
func TestRestartGuardExplainsItself(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	masters := strings.Join(redistest.Addrs(ms), ",")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	code, out, errOut := runOut("acquire", "job", "--masters", masters, "--ttl", "30s")
	advice := regexp.MustCompile(`redlockctl acquire: 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+ and 127\.0\.0\.1:\d+ restarted (under 1s|\d+s) ago or less and do not fsync every write, so they may have forgotten locks they granted: they are not counted toward a quorum for another (29|30)s\. Wait (30|31)s and try again, or turn the guard down with lock\.restart_guard in the config \(--restart-guard 0s for one command\)`)
	if code != exitFailure || !advice.MatchString(errOut) || strings.Contains(out+errOut, "timeout") || strings.Contains(out+errOut, "With") ||
		strings.Count(out, "ok (set, then released again: no quorum)  restarted") != 3 {
		t.Errorf("acquire on fresh masters: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runOut("run", "job", "--masters", masters, "--", "true")
	if code != exitFailure || !strings.Contains(errOut, "redlockctl run: 127.0.0.1:") || !strings.Contains(errOut, "Wait ") {
		t.Errorf("run on fresh masters: exit %d\n%s", code, errOut)
	}
	for _, args := range [][]string{
		{"--restart-guard", "0s", "acquire", "job", "--masters", masters, "--ttl", "30s"},
		{"acquire", "job2", "--masters", masters, "--restart-guard=0s"},
	} {
		code, out, errOut = runOut(args...)
		if code != exitOK || !strings.Contains(out, "acquired") || strings.Contains(errOut, "restarted") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// A resource whose name holds a newline: the force-release prompt shows it escaped,
// once, and takes it typed back in that form; the plan's lines escape it once.
func TestForceReleaseOddName(t *testing.T) {
	c := newAdminCLI(t, 3)
	const odd = "odd\nname"
	for _, s := range c.servers {
		if _, err := s.Do("SET", odd, "w:1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := c.run(t, "odd\\nname\n", "release", odd, "--force")
	if code != exitOK || !strings.Contains(out, `force-released "odd\nname"`) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `Type the resource name to confirm, escaped as shown (odd\nname): `) ||
		strings.Count(errOut, "odd\nname") != 0 || strings.Contains(errOut, `\\n`) {
		t.Errorf("the prompt and plan:\n%s", errOut)
	}
	for _, s := range c.servers {
		if n, err := redis.Int(s.Do("EXISTS", odd)); err != nil || n != 0 {
			t.Errorf("%s still holds the key: %d %v", s.Addr, n, err)
		}
	}
}
