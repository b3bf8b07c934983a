package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDumpWatchKeepsPausedHolder (real masters): `dump --watch` keeps a row whose only
// holder was paused after the first snapshot: each later snapshot still has it, uncertain,
// with last_seen (master, at, projected_pttl_ms) on the paused master's node. A one-shot
// dump of the same state has no memory and no row.
func TestDumpWatchKeepsPausedHolder(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	masters := strings.Join(redistest.Addrs(ms), ",")
	if _, err := ms[0].Do("SET", "lock:x", "w1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"dump", "--masters", masters, "-o", "ndjson", "--watch", "700ms", "--count", "4"}, &out, &errOut)
	}()
	for end := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "\n"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no first snapshot: %s", errOut.String())
		}
	}
	ms[0].Pause()
	defer ms[0].Resume()
	<-done
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d snapshots, want 4\n%s", len(lines), errOut.String())
	}
	type node struct {
		Master   string `json:"master"`
		Error    string `json:"error"`
		LastSeen *struct {
			Master    string    `json:"master"`
			At        time.Time `json:"at"`
			Projected int64     `json:"projected_pttl_ms"`
		} `json:"last_seen"`
	}
	type snapshot struct {
		Resources []struct {
			Resource  string `json:"resource"`
			Uncertain bool   `json:"uncertain"`
			Nodes     []node `json:"nodes"`
		} `json:"resources"`
	}
	snaps := make([]snapshot, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &snaps[i]); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
	}
	for i, s := range snaps[1:] {
		if len(s.Resources) != 1 || s.Resources[0].Resource != "lock:x" {
			t.Fatalf("snapshot %d after the pause lost lock:x: %s", i+2, lines[i+1])
		}
		n := s.Resources[0].Nodes[0]
		if !s.Resources[0].Uncertain || n.LastSeen == nil || n.LastSeen.Master != ms[0].Addr || n.LastSeen.Projected <= 0 || n.LastSeen.Projected > 60000 || n.Error == "" {
			t.Errorf("snapshot %d: %s, want uncertain with last_seen on the paused master", i+2, lines[i+1])
		}
	}
	if strings.Contains(lines[0], "last_seen") {
		t.Errorf("the first snapshot carries last_seen: %s", lines[0])
	}
	if _, one, _ := dump(t, "dump", "--masters", masters, "-o", "json"); strings.Contains(one, "lock:x") {
		t.Errorf("a one-shot dump remembered lock:x: %s", one)
	}
}

// TestDumpWatchInterruptedMidPoll (real masters): Ctrl-C while a poll waits on a paused
// master ends `dump --watch` at once, long before the poll's 20 s deadline, with the
// snapshots written so far intact and the last one's exit code; the cut-off poll is
// neither written nor tracked.
func TestDumpWatchInterruptedMidPoll(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	for _, m := range ms {
		if _, err := m.Do("SET", "lock:x", "w1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	var sb strings.Builder
	sb.WriteString("[inspect]\ntimeout = \"20s\"\n")
	for i, a := range redistest.Addrs(ms) {
		fmt.Fprintf(&sb, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, a)
	}
	cfg := writeConfig(t, sb.String())
	want, _, stderr := dump(t, "dump", "--config", cfg, "-o", "json") // what a snapshot of this state exits with
	if want != exitOK && want != exitFindings {
		t.Fatalf("one-shot dump: exit %d\n%s", want, stderr)
	}
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"dump", "--config", cfg, "-o", "ndjson", "--watch", "200ms"}, &out, &errOut)
	}()
	for end := time.Now().Add(10 * time.Second); strings.Count(out.String(), "\n") < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no second snapshot: %s", errOut.String())
		}
	}
	ms[2].Pause()
	defer ms[2].Resume()
	time.Sleep(time.Second) // the next poll is waiting on m3
	before := out.String()
	code := interrupt(t, done, "dump --watch")
	if got := out.String(); got != before {
		t.Fatalf("wrote after SIGINT:\n%s", strings.TrimPrefix(got, before))
	}
	lines := strings.Split(strings.TrimSpace(before), "\n")
	var last struct {
		Complete bool `json:"complete"`
		Masters  []struct {
			Up bool `json:"up"`
		} `json:"masters"`
	}
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("snapshot %d is not whole JSON: %v", i+1, err)
		}
	}
	if !last.Complete || len(last.Masters) != 3 || !last.Masters[2].Up {
		t.Fatalf("last snapshot written: complete %v, masters %+v; want the one before the pause", last.Complete, last.Masters)
	}
	if code != want {
		t.Fatalf("exit %d, want %d (the last snapshot's)\n%s", code, want, errOut.String())
	}
}

// interrupt sends this process SIGINT, as Ctrl-C would, while a command run in it
// (what) waits on its signal context, and returns what the command sent on done once
// it stopped. It fails the test if the command ended before, or did not stop within
// 10 s.
func interrupt[T any](t *testing.T, done <-chan T, what string) T {
	t.Helper()
	select {
	case r := <-done: // without its handler, SIGINT would end the test binary
		t.Fatalf("%s ended before SIGINT: %v", what, r)
	default:
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var r T
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not stop within 10s of SIGINT", what)
	}
	return r
}
