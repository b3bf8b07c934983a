package e2e

import (
	"fmt"
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
