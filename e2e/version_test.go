package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// A release build prints the version it was given, with the VCS revision it was built
// from; `version` and `--version` agree.
func TestReleaseVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "redlockctl")
	build := exec.Command("go", "build", "-buildvcs=true", "-ldflags", "-X github.com/redlockctl/redlockctl/internal/app/cli.version=v0.0.0-e2e", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want := regexp.MustCompile(`^redlockctl v0\.0\.0-e2e \(revision [0-9a-f]{40}(-dirty)?, go1\.\d+[^)]*\)\n$`)
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || !want.Match(out) {
			t.Errorf("%s: %q %v", arg, out, err)
		}
	}
}
