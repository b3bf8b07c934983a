package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// churnRecord is one lifecycle as the churn workload logged it (testdata/churn).
type churnRecord struct {
	Lib        string `json:"lib"`
	Key        string `json:"key"`
	Value      string `json:"value"`
	StartedNs  int64  `json:"started_ns"`
	AcquiredNs int64  `json:"acquired_ns"`
	EndedNs    int64  `json:"ended_ns"`
	End        string `json:"end"`
	Reached    *int   `json:"reached"` // a failed attempt's masters, where the library tells
}

// liveEvent is one line of `events -o ndjson`.
type liveEvent struct {
	At       time.Time `json:"at"`
	Event    string    `json:"event"`
	Resource string    `json:"resource"`
	Key      string    `json:"key"`
	Value    string    `json:"value"`
	Library  string    `json:"library"`
	Masters  int       `json:"masters"`
	Quorum   int       `json:"quorum"`
	TTLMs    int64     `json:"ttl_ms"`
	HeldMs   *float64  `json:"held_ms"`
	MarginMs *float64  `json:"margin_ms"`
	Source   string    `json:"source"`
	Master   string    `json:"master"`
	Reason   string    `json:"reason"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
}

var (
	churnOnce sync.Once
	churnBin  string
	churnErr  error
)

// buildChurn builds the workload once per run (it needs redsync from the module proxy).
func buildChurn(t testing.TB) string {
	t.Helper()
	churnOnce.Do(func() {
		churnBin = filepath.Join(filepath.Dir(binPath), "churn")
		cmd := exec.Command("go", "build", "-o", churnBin, ".")
		cmd.Dir = "testdata/churn"
		if out, err := cmd.CombinedOutput(); err != nil {
			churnErr = fmt.Errorf("build testdata/churn: %v\n%s", err, out)
		}
	})
	if churnErr != nil {
		t.Fatal(churnErr)
	}
	return churnBin
}

// runChurn runs the workload to its end and returns what it logged.
func runChurn(t testing.TB, args ...string) []churnRecord {
	t.Helper()
	recs, err := churn(buildChurn(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// churn runs the workload bin to its end (for goroutines: it calls no t method).
func churn(bin string, args ...string) ([]churnRecord, error) {
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("churn %v: %v\n%s", args, err, stderr.String())
	}
	var recs []churnRecord
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var r churnRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("churn output %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// eventsRun is a running `redlockctl events -o ndjson`.
type eventsRun struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []liveEvent
	bad    []string
	done   chan struct{}
	stderr lockedBuffer
}

// lockedBuffer is a bytes.Buffer that a command writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startEvents starts the binary's events command on config and collects its events.
// REDLOCKCTL_BENCH_LIVE_FEED_NICE=N runs it under `nice -n N` (make bench-live: a feed
// given priority on a busy host).
func startEvents(t testing.TB, config string, args ...string) *eventsRun {
	t.Helper()
	argv := append([]string{buildBinary(t), "events", "--config", config, "-o", "ndjson"}, args...)
	if n := os.Getenv("REDLOCKCTL_BENCH_LIVE_FEED_NICE"); n != "" {
		argv = append([]string{"nice", "-n", n}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	r := &eventsRun{cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &r.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); <-r.done })
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e liveEvent
			err := json.Unmarshal(sc.Bytes(), &e)
			r.mu.Lock()
			if err != nil {
				r.bad = append(r.bad, sc.Text())
			} else {
				r.events = append(r.events, e)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// waitFor waits up to d for an event that ok accepts.
func (r *eventsRun) waitFor(t testing.TB, d time.Duration, what string, ok func(liveEvent) bool) liveEvent {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		r.mu.Lock()
		for _, e := range r.events {
			if ok(e) {
				r.mu.Unlock()
				return e
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s event within %v; stderr: %s; events: %v", what, d, r.stderr.String(), r.kinds())
	return liveEvent{}
}

// stop ends the command with SIGTERM, checks it exits 0, and returns its events.
func (r *eventsRun) stop(t testing.TB) []liveEvent {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	<-r.done
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("events after SIGTERM: %v (want exit 0); stderr: %s", err, r.stderr.String())
	}
	if len(r.bad) > 0 {
		t.Fatalf("events wrote %d lines that are not JSON, first %q", len(r.bad), r.bad[0])
	}
	return r.events
}

func (r *eventsRun) kinds() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return countKinds(r.events)
}

func countKinds(evs []liveEvent) map[string]int {
	c := map[string]int{}
	for _, e := range evs {
		c[e.Event]++
	}
	return c
}

func countEnds(recs []churnRecord) map[string]int {
	c := map[string]int{}
	for _, r := range recs {
		c[r.End]++
	}
	return c
}

// liveConfig writes a config for masters with the patterns given.
func liveConfig(t testing.TB, servers []*redistest.Server, extra string, patterns ...string) string {
	t.Helper()
	return liveConfigLock(t, servers, "", extra, patterns...)
}

// liveConfigLock is liveConfig with lock, lines of the [lock] section, too.
func liveConfigLock(t testing.TB, servers []*redistest.Server, lock, extra string, patterns ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[lock]\nrestart_guard = \"0s\"\n%s\n[inspect]\npatterns = [%s]\n%s\n", lock, quoteList(patterns), extra)
	for i, s := range servers {
		fmt.Fprintf(&b, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// withUser rewrites config so that every master is reached as user.
func withUser(t testing.TB, config, user, password string) string {
	t.Helper()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "[[masters]]\n", fmt.Sprintf("[[masters]]\nusername = %q\npassword = %q\n", user, password))
	if err := os.WriteFile(config, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// contentionFigures is how a workload's failed attempts compare with the contended
// events of their keys.
type contentionFigures struct {
	failed    int         // failed attempts
	reached   int         // of them, those that reached at least one master
	unknown   int         // of them, those whose log does not say how many it reached
	contended int         // contended events
	matched   int         // of them, those matched to a failed attempt (below)
	exact     int         // of those, the ones that name as many masters as it reached
	unmatched []liveEvent // the others
	loggedBy  map[int]int // failed attempts that reached at least one master, by masters reached
	seenBy    map[int]int // contended events matched with as many masters, by masters
}

// judgeContention matches each contended event to one failed attempt of its key that
// reached a master and was under way when the event came (from its start to 250 ms
// after it returned: the feed hears the attempt's last removal about when the
// attempt returns), one that reached as many masters as the event names if there is.
func judgeContention(recs []churnRecord, events []liveEvent) contentionFigures {
	f := contentionFigures{loggedBy: map[int]int{}, seenBy: map[int]int{}}
	for _, r := range recs {
		if r.End != "failed" {
			continue
		}
		f.failed++
		switch {
		case r.Reached == nil:
			f.unknown++
		case *r.Reached >= 1:
			f.reached++
			f.loggedBy[*r.Reached]++
		}
	}
	used := make([]bool, len(recs))
	for _, e := range events {
		if e.Event != "contended" {
			continue
		}
		f.contended++
		match := -1
		for i, r := range recs {
			if !used[i] && r.End == "failed" && r.Key == e.Key && r.Reached != nil && *r.Reached >= 1 &&
				e.At.UnixNano() >= r.StartedNs && e.At.UnixNano() <= r.EndedNs+int64(250*time.Millisecond) &&
				(match < 0 || *r.Reached == e.Masters) {
				match = i
			}
		}
		if match < 0 {
			f.unmatched = append(f.unmatched, e)
			continue
		}
		used[match] = true
		f.matched++
		if *recs[match].Reached == e.Masters {
			f.exact++
			f.seenBy[e.Masters]++
		}
	}
	return f
}
