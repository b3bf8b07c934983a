package cli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestDumpGrowsItsPipe: a dump whose output is a pipe asks for a 1 MiB pipe buffer
// (Linux's 64 KiB made each snapshot's write block over and over), and writes the same
// output through it; output that is not a pipe is left alone.
func TestDumpGrowsItsPipe(t *testing.T) {
	ms := redistest.StartN(t, 1, redistest.Options{AOF: true}) // fsync always: no finding, exit 0
	ms[0].Do("SET", "lock:billing", "w1#0123456789abcdef0123456789abcdef", "PX", 60000)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&out, r); close(read) }()
	size := func() int {
		n, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := size(); n >= pipeSize {
		t.Fatalf("a new pipe already has %d bytes: the test shows nothing", n)
	}
	var errb bytes.Buffer
	if code := run([]string{"dump", "--masters", ms[0].Addr, "-o", "json"}, w, &errb); code != exitOK {
		t.Fatalf("dump: exit %d\n%s", code, errb.String())
	}
	if n := size(); n != pipeSize {
		t.Errorf("pipe buffer %d bytes after dump, want %d", n, pipeSize)
	}
	w.Close()
	<-read
	if !strings.Contains(out.String(), `"resource":"lock:billing"`) {
		t.Errorf("dump through the pipe: %s", out.String())
	}

	f, err := os.Create(t.TempDir() + "/out.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f) // a regular file: nothing to do, and no harm
	if code := run([]string{"dump", "--masters", ms[0].Addr, "-o", "json"}, f, &errb); code != exitOK {
		t.Fatalf("dump into a file: exit %d\n%s", code, errb.String())
	}
	if b, _ := os.ReadFile(f.Name()); !strings.Contains(string(b), `"resource":"lock:billing"`) {
		t.Errorf("dump into a file: %s", b)
	}
}
