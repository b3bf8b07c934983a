package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// `events --record` and `console --record` record the workload's lifecycles to the
// configured store: `history --at` the midpoint of each logged hold names its value.
// While one records, another --record is refused within seconds, naming the store
// and the process that has it. The console's detail view lists the resource's
// recorded holders.
func TestRecordFromEventsAndConsole(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the console end-to-end test (make test installs it)")
	}
	servers := redistest.StartN(t, 3, redistest.Options{})
	dir := t.TempDir()
	store := filepath.Join(dir, "history")
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[lock]\nkey_prefix = \"hist:\"\n\n[inspect]\npoll_interval = \"500ms\"\nresources = [\"w0-0\"]\n\n[history]\ndir = %q\n\n", store)
	for _, a := range redistest.Addrs(servers) {
		fmt.Fprintf(&cfg, "[[masters]]\naddr = %q\n\n", a)
	}
	cfgPath := writeConfig(t, cfg.String())
	bin := buildBinary(t)
	client, err := redlock.New(redistest.Pools(servers), redlock.WithKeyPrefix("hist:"), redlock.WithRetries(0), redlock.WithRestartGuard(0), redlock.WithOwner("e2e"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// refused runs `args --record` while another process records, and checks that it
	// fails at once naming the store and holder.
	refused := func(holder int, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--record", "--config", cfgPath)...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		began := time.Now()
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("%v --record while pid %d records: exit %d, want 1\n%s", args, holder, code, out.String())
		}
		for _, want := range []string{filepath.Join(store, "history.db"), "open in another process", "pid " + strconv.Itoa(holder) + " (redlockctl)"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v --record while pid %d records: %q lacks %q", args, holder, out.String(), want)
			}
		}
		if took := time.Since(began); took > 20*time.Second {
			t.Errorf("%v --record took %v to give up on a store another process has", args, took)
		}
	}
	// answers checks that history --at the midpoint of each hold names its value,
	// reading the store itself.
	answers := func(holds []histHold) {
		t.Helper()
		for _, h := range holds {
			mid := h.acquired.Add(h.released.Sub(h.acquired) / 2)
			out, err := exec.Command(bin, "history", "--config", cfgPath, h.resource, "--at", mid.UTC().Format(time.RFC3339Nano), "-o", "json").Output()
			var resp struct {
				Answer struct {
					Holders []struct{ Value string }
					Unknown string
				}
			}
			if jerr := json.Unmarshal(out, &resp); jerr != nil {
				t.Fatalf("history --at: %v %v\n%s", err, jerr, out)
			}
			if len(resp.Answer.Holders) != 1 || resp.Answer.Holders[0].Value != h.value {
				t.Errorf("%s at the midpoint of %s's hold: %+v", h.resource, h.value, resp.Answer)
			}
		}
	}

	// events --record.
	events := exec.Command(bin, "events", "--record", "-o", "ndjson", "--config", cfgPath)
	evOut := startLogged(t, events)
	evOut.waitFor(t, regexp.MustCompile(`(recording) every lock lifecycle to `))
	refused(events.Process.Pid, "events")
	busy := startTmux(t, bin+" console --config "+cfgPath+" --record")
	busy.waitFor(t, "pid "+strconv.Itoa(events.Process.Pid)+" (redlockctl)", "exit status 1")
	time.Sleep(2 * time.Second) // the feed reads every master whole
	byEvents := histWorkload(t, client, 3*time.Second)
	time.Sleep(3500 * time.Millisecond) // the feed's last ends, a flush, and the second a session covers behind it
	events.Process.Signal(syscall.SIGTERM)
	if err := events.Wait(); err != nil {
		t.Fatalf("events: %v\n%s", err, evOut.text())
	}
	if len(byEvents) < 10 {
		t.Fatalf("the workload logged %d holds", len(byEvents))
	}
	answers(byEvents)

	// console --record; its detail view lists w0-0's recorded holders.
	var last histHold
	for _, h := range byEvents {
		if h.resource == "w0-0" {
			last = h
		}
	}
	if last.value == "" {
		t.Fatal("the workload never held w0-0")
	}
	console := startTmux(t, bin+" console --config "+cfgPath+" --record")
	console.waitFor(t, "w0-0")
	console.keys(t, "/")
	console.literal(t, "w0-0")
	console.keys(t, "Enter", "Enter")
	console.waitFor(t, "Recorded", last.value)
	pid, err := exec.Command("pgrep", "-n", "-f", "redlockctl console --config "+cfgPath+" --record").Output()
	if err != nil {
		t.Fatalf("pgrep: %v", err)
	}
	consolePid, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	refused(consolePid, "events")
	time.Sleep(2 * time.Second)
	byConsole := histWorkload(t, client, 3*time.Second)
	var next histHold
	for _, h := range byConsole {
		if h.resource == "w0-0" {
			next = h
		}
	}
	console.keys(t, "r")
	if next.value != "" {
		console.waitFor(t, next.value)
	}
	time.Sleep(3500 * time.Millisecond)
	console.keys(t, "q")
	console.waitFor(t, "exit status 0")
	answers(byConsole)
}
