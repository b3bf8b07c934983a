package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// kindCase is one master of the error-kind fixture: how it fails and what it must be called.
type kindCase struct {
	name, kind, text string // kind: expected error_kind; text: a word of the message
}

// kindFixture starts two healthy masters and five broken ones, each failing in its own
// way, and writes a config naming them: m1, m2 healthy (both holding "kinds:job"); m3
// WRONGPASS (wrong password), m4 NOAUTH (none configured for a server that wants one),
// m5 a TLS-only server dialled without TLS, m6 refused (the server was killed), m7
// paused (SIGSTOP).
func kindFixture(t *testing.T) (string, []kindCase) {
	t.Helper()
	good := redistest.StartN(t, 2, redistest.Options{})
	locked := redistest.StartN(t, 2, redistest.Options{Password: "right-pass"})
	tlsOnly := redistest.Start(t, redistest.Options{TLS: true})
	gone := redistest.Start(t, redistest.Options{})
	gone.Kill()
	paused := redistest.Start(t, redistest.Options{})
	paused.Pause()
	t.Cleanup(paused.Resume)
	for _, s := range good {
		if _, err := s.Do("SET", "kinds:job", "worker-1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KINDS_WRONG_PW", "not-the-password")
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "audit_log = %q\n[lock]\nrestart_guard = \"0s\"\nnode_timeout = \"200ms\"\nretries = 0\n[inspect]\ntimeout = \"500ms\"\n", filepath.Join(dir, "audit.log"))
	master := func(name, addr, extra string) {
		fmt.Fprintf(&b, "[[masters]]\nname = %q\naddr = %q\n%s", name, addr, extra)
	}
	master("m1", good[0].Addr, "")
	master("m2", good[1].Addr, "")
	master("m3", locked[0].Addr, "password_env = \"KINDS_WRONG_PW\"\n")
	master("m4", locked[1].Addr, "")
	master("m5", tlsOnly.Addr, "")
	master("m6", gone.Addr, "")
	master("m7", paused.Addr, "")
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, []kindCase{
		{"m3", "auth", "WRONGPASS"},
		{"m4", "auth", "NOAUTH"},
		{"m5", "tls", "TLS-only"},
		{"m6", "refused", "refused"},
		{"m7", "timeout", ""},
	}
}

// TestErrorKindsNamed: WRONGPASS, NOAUTH, a TLS-only server dialled in plain text, a
// refused connection and a paused server each carry their own error_kind in the dump
// JSON (masters and nodes), in the dump table, in doctor's hint, in the force-release
// plan and in the admin CLI's per-master lines, and no message carries the password.
func TestErrorKindsNamed(t *testing.T) {
	cfg, cases := kindFixture(t)

	code, out, errOut := dump(t, "dump", "--config", cfg, "-o", "json")
	if code != exitFailure {
		t.Errorf("dump with 2 of 7 masters up: exit %d, want 1\n%s", code, errOut)
	}
	var snap struct {
		Masters []struct {
			Name      string `json:"name"`
			Up        bool   `json:"up"`
			Error     string `json:"error"`
			ErrorKind string `json:"error_kind"`
		} `json:"masters"`
		Resources []struct {
			Resource string `json:"resource"`
			Nodes    []struct {
				Master    string `json:"master"`
				Error     string `json:"error"`
				ErrorKind string `json:"error_kind"`
			} `json:"nodes"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &snap); err != nil || len(snap.Masters) != 7 || len(snap.Resources) != 1 {
		t.Fatalf("dump -o json: %v\n%s", err, out)
	}
	for i, c := range cases {
		m, n := snap.Masters[i+2], snap.Resources[0].Nodes[i+2]
		if m.Name != c.name || m.Up || m.ErrorKind != c.kind || !strings.Contains(m.Error, c.text) {
			t.Errorf("JSON master %s: up %v error_kind %q error %q; want %s with %q", m.Name, m.Up, m.ErrorKind, m.Error, c.kind, c.text)
		}
		if n.ErrorKind != c.kind || n.Error == "" {
			t.Errorf("JSON node %s: error_kind %q error %q; want %s", n.Master, n.ErrorKind, n.Error, c.kind)
		}
	}
	if m := snap.Masters[0]; !m.Up || m.ErrorKind != "" || snap.Resources[0].Nodes[0].ErrorKind != "" {
		t.Errorf("a healthy master carries an error_kind: %+v", m)
	}
	if strings.Contains(out, "not-the-password") {
		t.Errorf("the dump carries the password")
	}

	_, out, _ = dump(t, "doctor", "--config", cfg, "--duration", "300ms", "--interval", "150ms")
	if !strings.Contains(out, "did not answer (auth)") || !strings.Contains(out, "check password_env / ACL user") ||
		!strings.Contains(out, "did not answer (tls)") || !strings.Contains(out, "did not answer (timeout)") {
		t.Errorf("doctor does not name the kinds with their hints:\n%s", out)
	}

	c := &adminCLI{config: cfg}
	_, _, errs := c.run(t, "", "release", "kinds:job", "--force", "--any-value")
	for _, k := range cases {
		line := lineOf(errs, "  "+k.name+" ")
		if !strings.Contains(line, "did not answer, "+k.kind+": ") || !strings.Contains(line, k.text) {
			t.Errorf("force-release plan for %s: %q, want kind %s", k.name, line, k.kind)
		}
	}
	if !strings.Contains(lineOf(errs, "  m3 "), "check password_env / ACL user") {
		t.Errorf("the plan gives no hint for auth:\n%s", errs)
	}

	_, out, _ = c.run(t, "", "acquire", "kinds:other", "--ttl", "5s")
	for _, k := range cases {
		if line := lineOf(out, "  "+k.name+" "); !strings.Contains(line, "  "+k.kind+": ") {
			t.Errorf("acquire result for %s: %q, want kind %s", k.name, line, k.kind)
		}
	}
	_, out, _ = c.run(t, "", "acquire", "kinds:other", "--ttl", "5s", "-o", "json")
	r := adminDecode(t, out)
	for i, k := range cases {
		if got := r.Nodes[i+2].ErrorKind.String(); got != k.kind {
			t.Errorf("acquire JSON for %s: error_kind %q, want %s (%s)", k.name, got, k.kind, r.Nodes[i+2].Error)
		}
	}
}

// lineOf returns the first line of s containing sub ("" if none).
func lineOf(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
