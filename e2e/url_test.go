package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// --masters takes redis:// URLs with a user, a password and a database, as redis-cli
// and the client libraries do; the password is never printed, in the table, the JSON
// or an error.
func TestMastersAsURLs(t *testing.T) {
	const pw = "s3cr3t-Zq81-url-pw"
	ms := redistest.StartN(t, 3, redistest.Options{Password: pw, AOF: true})
	var urls []string
	for _, m := range ms {
		mustDo(t, m, "SELECT", 0)
		urls = append(urls, fmt.Sprintf("redis://:%s@%s/0", pw, m.Addr))
	}
	c := ms[0].Pool.Get()
	if _, err := c.Do("SET", "job", "w:1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, format := range []string{"table", "json"} {
		code, out, errOut := dump(t, "--masters", strings.Join(urls, ","), "-o", format)
		if code == exitUsage || code == exitFailure || !strings.Contains(out, ms[0].Addr) || !strings.Contains(out, "job") {
			t.Fatalf("-o %s: exit %d\n%s\n%s", format, code, out, errOut)
		}
		if strings.Contains(out+errOut, pw[:8]) {
			t.Errorf("-o %s prints the URL's password:\n%s\n%s", format, out, errOut)
		}
	}
	// A wrong password and a bad URL: errors name the master, never the password.
	wrong := fmt.Sprintf("redis://:wrong-%s@%s", pw, ms[0].Addr)
	code, out, errOut := dump(t, "--masters", wrong+","+urls[1]+","+urls[2], "-o", "json")
	if code != exitFindings || strings.Contains(out+errOut, pw[:8]) || !strings.Contains(out, `"up":false`) {
		t.Errorf("a wrong password: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = dump(t, "--masters", fmt.Sprintf("redis://:%s@%s/x", pw, ms[0].Addr))
	if code != exitUsage || strings.Contains(out+errOut, pw[:8]) || !strings.Contains(errOut, "database number") {
		t.Errorf("a bad URL: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A server that echoes a refused AUTH's arguments (here a real Redis with AUTH
// renamed, which quotes them cut at 128 characters) never gets a run of the password
// printed: not in dump's table or JSON, not by acquire, not in the audit log.
func TestEchoedPasswordNeverPrinted(t *testing.T) {
	pw := strings.Repeat("Kx9!pQ2w-", 22) + "end" // 201 characters
	echo := redistest.Start(t, redistest.Options{Config: []string{`rename-command AUTH ""`}})
	ms := append([]*redistest.Server{echo}, redistest.StartN(t, 2, redistest.Options{})...)
	t.Setenv("ECHO_TEST_PW", pw)
	audit := t.TempDir() + "/audit.log"
	cfg := fmt.Sprintf("audit_log = %q\n[lock]\nrestart_guard = \"0s\"\nretries = 0\n", audit)
	for i, m := range ms {
		cfg += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
		if i == 0 {
			cfg += "password_env = \"ECHO_TEST_PW\"\n"
		}
	}
	path := writeConfig(t, cfg)
	var all strings.Builder
	for _, args := range [][]string{{"dump", "-o", "json"}, {"dump"}, {"doctor", "--duration", "0"}, {"acquire", "job", "--ttl", "5s"}} {
		var out, errOut strings.Builder
		code := run(append(args, "--config", path), &out, &errOut)
		all.WriteString(out.String() + errOut.String())
		if code == exitUsage {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
	}
	if !strings.Contains(all.String(), "with args beginning with: [redacted]") {
		t.Errorf("the refused AUTH is not shown (redacted) at all:\n%s", all.String())
	}
	b, _ := os.ReadFile(audit)
	text := all.String() + string(b)
	for i := 0; i+8 <= len(pw); i++ {
		if strings.Contains(text, pw[i:i+8]) {
			t.Fatalf("a run of the password (%q) was printed:\n%s", pw[i:i+8], text)
		}
	}
}
