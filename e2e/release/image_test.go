//go:build release

package release

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

const imageUID = "65532"

// The Dockerfile builds, with podman, from the snapshot's binaries laid out as
// goreleaser's dockers_v2 lays them out (TARGETPLATFORM/redlockctl beside the CA
// bundle), for both platforms; the image runs `serve` by default as an unprivileged
// user. Run with a mounted config and password file against a real redis-server (an
// ACL user that may only read), it serves that server's locks on /metrics.
func TestImage(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("RELEASE-CHECK: podman is not installed: run make release-check (it installs Debian's podman)")
	}
	ctx := buildContext(t)
	images := map[string]string{}
	for _, arch := range arches {
		img := "localhost/redlockctl-release-check:" + arch
		images[arch] = img
		t.Cleanup(func() { exec.Command("podman", "rmi", "-f", img).Run() })
		command(t, "podman", "build", "--platform", "linux/"+arch, "-t", img, ctx)
		if got := strings.TrimSpace(command(t, "podman", "image", "inspect", "-f", "{{.Architecture}}", img)); got != arch {
			t.Errorf("%s: architecture %q", img, got)
		}
	}
	img := images[runtime.GOARCH]
	checkImageConfig(t, img)
	run := podmanRun(t, img)

	redis := redistest.Start(t, redistest.Options{Users: []string{"redlockctl on >s3cret ~* +@read +scan +time +info +config|get"}})
	if _, err := redis.Do("SET", "job", "worker-1@host#0123456789abcdef0123456789abcdef", "PX", 120000); err != nil {
		t.Fatal(err)
	}
	etc, secrets := mountDir(t), mountDir(t)
	writeFile(t, filepath.Join(etc, "config.toml"), 0o644, fmt.Sprintf(`name = "release-check"
read_only = true

[inspect]
poll_interval = "500ms"
resources = ["job"]

[[masters]]
name = "m1"
addr = %q
username = "redlockctl"
password_file = "/run/secrets/redlockctl/m1"
`, redis.Addr))
	pw := filepath.Join(secrets, "m1")
	writeFile(t, pw, 0o400, "s3cret\n")
	if err := os.Chown(pw, 65532, 65532); err != nil {
		t.Fatal(err)
	}

	listen := freePort(t)
	name := fmt.Sprintf("redlockctl-release-check-%d", os.Getpid())
	args := append(run, "-d", "--name", name, "--network", "host",
		"-v", etc+":/etc/redlockctl:ro", "-v", secrets+":/run/secrets/redlockctl:ro",
		img, "serve", "--listen", listen)
	t.Cleanup(func() { exec.Command("podman", "rm", "-f", name).Run() })
	command(t, "podman", args...)

	waitHealthy(t, name, "http://"+listen+"/healthz")
	metrics := get(t, "http://"+listen+"/metrics")
	for _, want := range []string{
		"redlockctl_up 1\n",
		`redlockctl_master_up{master="m1"} 1` + "\n",
		`redlockctl_lock_held{resource="job"} 1` + "\n",
		`version="v` + meta.Version + `"`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grep(metrics, "redlockctl_"))
		}
	}
	pid := strings.TrimSpace(command(t, "podman", "inspect", "-f", "{{.State.Pid}}", name))
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"Uid", "Gid"} {
		want := field + ":\t" + strings.Repeat(imageUID+"\t", 3) + imageUID
		if !strings.Contains(string(status), want+"\n") {
			t.Errorf("the container's process (pid %s) is not %s %s:\n%s", pid, strings.ToLower(field), imageUID, grep(string(status), field))
		}
	}
	if cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline"); !strings.Contains(string(cmdline), "serve") {
		t.Errorf("the container runs %q", cmdline)
	}
}

// buildContext lays out the image's build context as goreleaser does: the
// Dockerfile, linux/ARCH/redlockctl for each platform, the CA bundle of the before
// hook, and the .dockerignore of a hand-made build (which must keep all of them).
func buildContext(t *testing.T) string {
	t.Helper()
	ctx := t.TempDir()
	root := filepath.Join("..", "..")
	copyFile(t, filepath.Join(root, "Dockerfile"), filepath.Join(ctx, "Dockerfile"))
	copyFile(t, filepath.Join(root, ".dockerignore"), filepath.Join(ctx, ".dockerignore"))
	copyFile(t, filepath.Join(root, "release-assets", "ca-certificates.crt"), filepath.Join(ctx, "release-assets", "ca-certificates.crt"))
	for _, arch := range arches {
		bins := ofType("Binary", "linux", arch)
		if len(bins) != 1 {
			t.Fatalf("linux/%s: %d binaries in dist/", arch, len(bins))
		}
		copyFile(t, bins[0].path(), filepath.Join(ctx, "linux", arch, "redlockctl"))
	}
	return ctx
}

// checkImageConfig checks what the image runs, as whom, and where it looks for its
// config.
func checkImageConfig(t *testing.T, img string) {
	t.Helper()
	var c struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Env          []string
		ExposedPorts map[string]any
	}
	if err := json.Unmarshal([]byte(command(t, "podman", "image", "inspect", "-f", "{{json .Config}}", img)), &c); err != nil {
		t.Fatal(err)
	}
	if c.User != imageUID+":"+imageUID || !slices.Equal(c.Entrypoint, []string{"/usr/bin/redlockctl"}) || !slices.Equal(c.Cmd, []string{"serve"}) ||
		!slices.Contains(c.Env, "REDLOCKCTL_CONFIG=/etc/redlockctl/config.toml") || c.ExposedPorts["7335/tcp"] == nil {
		t.Errorf("image config %+v: want user %s:%s, redlockctl serve, the config in /etc/redlockctl, port 7335", c, imageUID, imageUID)
	}
}

// podmanRun returns the `podman ... run` arguments that run a container here. Podman's
// defaults come first; where they fail (crun refuses a cgroup v1/v2 hybrid, or
// raising RLIMIT_NOFILE without CAP_SYS_RESOURCE), runc with this process's own
// limits. When neither runs a container the test fails and says why.
func podmanRun(t *testing.T, img string) []string {
	t.Helper()
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	tries := [][]string{
		{"run"},
		{"--runtime", "runc", "run", "--ulimit", fmt.Sprintf("nofile=%d:%d", lim.Cur, lim.Cur), "--ulimit", "nproc=4096:4096"},
	}
	var failures []string
	for _, args := range tries {
		out, err := exec.Command("podman", append(append(slices.Clone(args), "--rm", img), "version")...).CombinedOutput()
		if err == nil && strings.HasPrefix(string(out), "redlockctl v") {
			if len(failures) > 0 {
				t.Logf("RELEASE-CHECK: podman's defaults cannot run a container here (%s); running with: podman %s",
					failures[0], strings.Join(args, " "))
			}
			return args
		}
		failures = append(failures, fmt.Sprintf("podman %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))))
	}
	t.Fatalf("RELEASE-CHECK FAILED: podman cannot run a container on this machine, so the image is untested:\n%s",
		strings.Join(failures, "\n"))
	return nil
}

// waitHealthy waits up to 30 s for url to answer 200, failing with the container's
// log if it does not.
func waitHealthy(t *testing.T, name, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	logs, _ := exec.Command("podman", "logs", name).CombinedOutput()
	t.Fatalf("%s did not answer 200 within 30s; the container's log:\n%s", url, logs)
}

func get(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// freePort returns a loopback address nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// mountDir is a temporary directory the container's user may enter.
func mountDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, path string, mode os.FileMode, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, 0o755, string(b))
}

// grep returns the lines of text that contain s.
func grep(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
