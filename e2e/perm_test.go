package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// A user that may SET but not run scripts: run refuses before starting its command
// (exit 2, naming the permission) instead of starting it and killing it at the first
// extension; release --value says the masters refused, never "no master holds that
// value".
func TestMissingScriptPermission(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{Users: []string{"setonly on >pw-setonly ~* +@all -eval -evalsha -script"}})
	t.Setenv("PERM_TEST_PW", "pw-setonly")
	cfg := fmt.Sprintf("audit_log = %q\n[lock]\nrestart_guard = \"0s\"\nretries = 0\n", filepath.Join(t.TempDir(), "audit.log"))
	for i, m := range ms {
		cfg += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\nusername = \"setonly\"\npassword_env = \"PERM_TEST_PW\"\n", i+1, m.Addr)
	}
	path := writeConfig(t, cfg)
	marker := filepath.Join(t.TempDir(), "ran")
	var out, errOut strings.Builder
	code := run([]string{"run", "job", "--ttl", "2s", "--config", path, "--", "touch", marker}, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "NOPERM") || !strings.Contains(errOut.String(), "+evalsha") {
		t.Errorf("run: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	value := "w:1#0123456789abcdef0123456789abcdef"
	for _, m := range ms {
		mustDo(t, m, "SET", "held", value, "PX", 60000)
	}
	out.Reset()
	errOut.Reset()
	code = run([]string{"release", "held", "--value", value, "--config", path}, &out, &errOut)
	if code != exitFailure || strings.Contains(errOut.String(), "no master holds that value") || !strings.Contains(errOut.String(), "3 master(s) refused the release") {
		t.Errorf("release --value: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// run keeps the masters' password variables out of the command's environment.
func TestRunKeepsPasswordsFromTheCommand(t *testing.T) {
	ms := []*redistest.Server{redistest.Start(t, redistest.Options{Password: "pw-env-secret-77"})}
	ms = append(ms, redistest.StartN(t, 2, redistest.Options{})...)
	t.Setenv("RUN_TEST_PW", "pw-env-secret-77")
	t.Setenv("RUN_TEST_OTHER", "kept")
	cfg := fmt.Sprintf("audit_log = %q\n[lock]\nrestart_guard = \"0s\"\n", filepath.Join(t.TempDir(), "audit.log"))
	for i, m := range ms {
		cfg += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
		if i == 0 {
			cfg += "password_env = \"RUN_TEST_PW\"\n"
		}
	}
	envFile := filepath.Join(t.TempDir(), "env")
	var out, errOut strings.Builder
	code := run([]string{"run", "job", "--config", writeConfig(t, cfg), "--", "sh", "-c", "env > " + envFile}, &out, &errOut)
	b, err := os.ReadFile(envFile)
	if code != 0 || err != nil {
		t.Fatalf("run: exit %d %v\n%s", code, err, errOut.String())
	}
	if strings.Contains(string(b), "pw-env-secret") || strings.Contains(string(b), "RUN_TEST_PW") || !strings.Contains(string(b), "RUN_TEST_OTHER=kept") {
		t.Errorf("the command's environment:\n%s", b)
	}
}
