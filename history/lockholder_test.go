package history

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A store another process holds is an error within lockTimeout, for a writer and
// a reader alike, naming the file and the process that holds it.
func TestOpenLockedNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, fileName)
	// flock(1) takes an exclusive flock(2), as bbolt does, and holds it while its
	// command runs.
	holder := exec.Command("flock", "--exclusive", path, "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for lockHolder(path) == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, o := range []Options{{}, {ReadOnly: true}} {
		began := time.Now()
		_, err := Open(dir, o)
		took := time.Since(began)
		if err == nil {
			t.Fatalf("Open(%+v) of a store another process holds: no error", o)
		}
		want := []string{path, "open in another process", "pid " + strconv.Itoa(holder.Process.Pid) + " (flock)"}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%+v): %q lacks %q", o, err, w)
			}
		}
		if took > lockTimeout+2*time.Second {
			t.Errorf("Open(%+v) took %v to give up: want about %v", o, took, lockTimeout)
		}
	}
}
