//go:build release

package release

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

const (
	unit     = "/usr/lib/systemd/system/redlockctl.service"
	etcConf  = "/etc/redlockctl/config.toml"
	maxScore = 2.0 // systemd-analyze security's exposure; 1.4 when written
)

// command runs name with args and returns its combined output; a failure fails t.
func command(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The .deb installs with dpkg: the binary says the release's version, the service
// user exists, the unit verifies and is hardened, the packaged config loads as that
// user, a local edit of it survives a reinstall, and remove then purge take it all
// away but the user.
func TestDeb(t *testing.T) {
	debs := ofType("Linux Package", "linux", runtime.GOARCH)
	var deb string
	for _, a := range debs {
		if strings.HasSuffix(a.Name, ".deb") {
			deb = a.path()
		}
	}
	if deb == "" {
		t.Fatalf("no .deb for linux/%s in dist/", runtime.GOARCH)
	}
	if os.Geteuid() != 0 {
		t.Fatal("dpkg -i needs root: run make release-check as root (sudo make release-check)")
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Status}", "redlockctl").Output(); err == nil && len(out) > 0 && !strings.Contains(string(out), "not-installed") {
		t.Fatalf("a redlockctl package is already on this machine (%s): dpkg -P redlockctl first", out)
	}
	if conf := command(t, "dpkg-deb", "-I", deb, "conffiles"); strings.TrimSpace(conf) != etcConf {
		t.Errorf("conffiles %q, want %s", conf, etcConf)
	}
	t.Cleanup(func() { exec.Command("dpkg", "-P", "redlockctl").Run() })
	command(t, "dpkg", "-i", deb)

	checkVersion(t, "/usr/bin/redlockctl (.deb)", command(t, "/usr/bin/redlockctl", "--version"))
	user := command(t, "getent", "passwd", "redlockctl")
	if f := strings.Split(strings.TrimSpace(user), ":"); len(f) != 7 || f[2] == "0" || !strings.HasSuffix(f[6], "nologin") {
		t.Errorf("service user %q: want an unprivileged system user without a shell", user)
	}
	for _, f := range []string{unit, etcConf, "/usr/share/man/man1/redlockctl-serve.1.gz",
		"/usr/share/bash-completion/completions/redlockctl", "/usr/share/zsh/vendor-completions/_redlockctl",
		"/usr/share/fish/vendor_completions.d/redlockctl.fish"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("installed: %v", err)
		}
	}
	checkUnit(t)
	if out := command(t, "runuser", "-u", "redlockctl", "--", "/usr/bin/redlockctl", "config", "check", "--config", etcConf); !strings.Contains(out, "read_only = true") {
		t.Errorf("config check as redlockctl:\n%s", out)
	}

	// A local edit of the config is kept when the package is installed again.
	f, err := os.OpenFile(etcConf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# edited here\n")
	f.Close()
	command(t, "dpkg", "-i", deb)
	if b, _ := os.ReadFile(etcConf); !strings.HasSuffix(string(b), "# edited here\n") {
		t.Errorf("a reinstall replaced the edited %s", etcConf)
	}

	command(t, "dpkg", "-r", "redlockctl")
	if _, err := os.Stat("/usr/bin/redlockctl"); err == nil {
		t.Error("dpkg -r left /usr/bin/redlockctl")
	}
	if _, err := os.Stat(etcConf); err != nil {
		t.Errorf("dpkg -r removed the config (a remove keeps conffiles): %v", err)
	}
	command(t, "dpkg", "-P", "redlockctl")
	if _, err := os.Stat(etcConf); err == nil {
		t.Error("dpkg -P left the config")
	}
}

// checkUnit verifies the installed unit (systemd-analyze prints nothing for a good
// one and warns, still exiting 0, for a bad key or value) and scores its sandbox.
func checkUnit(t *testing.T) {
	t.Helper()
	if out := command(t, "systemd-analyze", "verify", unit); out != "" {
		t.Errorf("systemd-analyze verify %s:\n%s", unit, out)
	}
	out := command(t, "systemd-analyze", "security", "--offline=true", unit)
	m := regexp.MustCompile(`Overall exposure level for redlockctl.service: (\d+\.\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no exposure level:\n%s", out)
	}
	if score, _ := strconv.ParseFloat(m[1], 64); score > maxScore {
		t.Errorf("the unit's exposure is %.1f, want at most %.1f:\n%s", score, maxScore, out)
	}
	t.Logf("systemd-analyze security: exposure %s", m[1])
}

// Each .rpm holds the binary, the unit and the config marked %config(noreplace), and
// creates the service user after install.
func TestRpm(t *testing.T) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Fatal("rpm is not installed: run make release-check (it installs Debian's rpm package)")
	}
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}
	n := 0
	for _, a := range ofType("Linux Package", "linux", "") {
		if !strings.HasSuffix(a.Name, ".rpm") {
			continue
		}
		n++
		p := a.path()
		if got := command(t, "rpm", "-qp", "--qf", "%{NAME} %{ARCH} %{LICENSE}", p); got != "redlockctl "+arch[a.Goarch]+" Apache-2.0" {
			t.Errorf("%s: %q", a.Name, got)
		}
		flags := map[string]string{}
		for _, line := range strings.Split(command(t, "rpm", "-qp", "--qf", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]", p), "\n") {
			if f, name, ok := strings.Cut(line, " "); ok {
				flags[name] = f
			}
		}
		if f, ok := flags[etcConf]; !ok || !strings.Contains(f, "c") || !strings.Contains(f, "n") {
			t.Errorf("%s: %s flags %q, want config (c) and noreplace (n)", a.Name, etcConf, f)
		}
		for _, f := range []string{"/usr/bin/redlockctl", unit, "/usr/share/man/man1/redlockctl.1.gz"} {
			if _, ok := flags[f]; !ok {
				t.Errorf("%s lacks %s", a.Name, f)
			}
		}
		if s := command(t, "rpm", "-qp", "--scripts", p); !strings.Contains(s, "postinstall scriptlet") || !strings.Contains(s, "useradd --system") {
			t.Errorf("%s: no postinstall creating the user:\n%s", a.Name, s)
		}
	}
	if n != len(arches) {
		t.Errorf("%d .rpm files, want %d", n, len(arches))
	}
}
