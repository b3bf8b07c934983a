package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// serve --web.config.file takes exporter-toolkit's web config, as node_exporter does:
// with basic auth, /metrics answers 401 without the password and 200 with it; a bad
// file is refused at start (exit 2).
func TestServeWebConfigBasicAuth(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	hash, err := bcrypt.GenerateFromPassword([]byte("scrape-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	web := filepath.Join(dir, "web.yml")
	os.WriteFile(web, []byte(fmt.Sprintf("basic_auth_users:\n  prometheus: %s\n", hash)), 0o600)
	masters := strings.Join(redistest.Addrs(ms), ",")
	addr := freeAddr(t)
	serve := exec.Command(buildBinary(t), "serve", "--masters", masters, "--listen", addr, "--web.config.file", web)
	out := startLogged(t, serve)
	out.waitFor(t, regexp.MustCompile(`serving (http)://`))
	u := "http://" + addr + "/metrics"
	waitHTTP := func(user, pw string) int {
		req, _ := http.NewRequest("GET", u, nil)
		if user != "" {
			req.SetBasicAuth(user, pw)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", u, err, out.text())
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := waitHTTP("", ""); code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
	if code := waitHTTP("prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong password: %d, want 401", code)
	}
	if code := waitHTTP("prometheus", "scrape-pw"); code != http.StatusOK {
		t.Errorf("with the password: %d, want 200\n%s", code, out.text())
	}
	os.WriteFile(web, []byte("basic_auth_users: [not a map\n"), 0o600)
	bad := exec.Command(buildBinary(t), "serve", "--masters", masters, "--listen", freeAddr(t), "--web.config.file", web)
	b, err := bad.CombinedOutput()
	if bad.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(b), "--web.config.file") {
		t.Errorf("a bad web config: %v exit %d\n%s", err, bad.ProcessState.ExitCode(), b)
	}
}
