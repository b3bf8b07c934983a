package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// Without audit_log, admin actions are audited in the default place
// ($XDG_STATE_HOME/redlockctl/audit.log, its directory created); not auditing is
// explicit (audit_log = "off" or --no-audit). run checks its audit log before it
// acquires anything.
func TestAuditByDefaultAndOffOnlyExplicitly(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	def := filepath.Join(state, "redlockctl", "audit.log")
	base := "[lock]\nrestart_guard = \"0s\"\n"
	for i, m := range ms {
		base += "[[masters]]\nname = \"m" + string(rune('1'+i)) + "\"\naddr = \"" + m.Addr + "\"\n"
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := func() int {
		b, _ := os.ReadFile(def)
		return strings.Count(string(b), "\n")
	}
	plain := write("plain.toml", base)
	if code, _, errOut := runOut("acquire", "a", "--ttl", "5s", "--config", plain); code != exitOK || lines() != 2 {
		t.Fatalf("default audit log: exit %d, %d lines in %s\n%s", code, lines(), def, errOut)
	}
	off := write("off.toml", "audit_log = \"off\"\n"+base)
	if code, _, _ := runOut("acquire", "b", "--ttl", "5s", "--config", off); code != exitOK || lines() != 2 {
		t.Errorf("audit_log = off: exit %d, %d lines", code, lines())
	}
	if code, _, _ := runOut("acquire", "c", "--ttl", "5s", "--no-audit", "--config", plain); code != exitOK || lines() != 2 {
		t.Errorf("--no-audit: exit %d, %d lines", code, lines())
	}
	missing := write("missing.toml", "audit_log = \""+filepath.Join(dir, "nodir", "audit.log")+"\"\n"+base)
	marker := filepath.Join(dir, "ran")
	code, _, errOut := runOut("run", "d", "--config", missing, "--", "touch", marker)
	if _, err := os.Stat(marker); code != exitUsage || err == nil || !strings.Contains(errOut, "audit log cannot be written") {
		t.Errorf("run with an unwritable audit log: exit %d (command ran: %v)\n%s", code, err == nil, errOut)
	}
	for _, m := range ms {
		if v := m.Get(t, "d"); v != "" {
			t.Errorf("run acquired %q although its audit log cannot be written", v)
		}
	}
}
