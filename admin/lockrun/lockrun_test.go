package lockrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// testOpts are the client options of every test: a node timeout with room for a loaded
// machine.
var testOpts = []redlock.Option{redlock.WithNodeTimeout(500 * time.Millisecond), redlock.WithRetryDelay(30 * time.Millisecond),
	redlock.WithRestartGuard(0)} // the test servers have just started

// fixture is real masters and a directory the commands write into.
type fixture struct {
	servers []*redistest.Server
	pools   []*redis.Pool
	dir     string

	mu     sync.Mutex
	events []Event
}

func newFixture(t *testing.T, n int) *fixture {
	t.Helper()
	s := redistest.StartN(t, n, redistest.Options{})
	return &fixture{servers: s, pools: redistest.Pools(s), dir: t.TempDir()}
}

// job is a Job running script with sh, with $D set to the fixture's directory.
func (f *fixture) job(resource, script string) Job {
	return Job{
		Resource: resource,
		TTL:      time.Second,
		Grace:    time.Second,
		Args:     []string{"sh", "-c", script},
		Env:      append(os.Environ(), "D="+f.dir),
		Event: func(e Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		},
	}
}

func (f *fixture) path(name string) string { return filepath.Join(f.dir, name) }

// lines returns the lines of a file the commands wrote ("" and nil when it is missing).
func (f *fixture) lines(name string) []string {
	b, err := os.ReadFile(f.path(name))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// waitFile waits until a command created name.
func (f *fixture) waitFile(t *testing.T, name string, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for {
		if _, err := os.Stat(f.path(name)); err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s not created within %v", name, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLine waits until a command wrote a whole first line to name (the shell creates
// the file before it writes to it) and returns that line.
func (f *fixture) waitLine(t *testing.T, name string, within time.Duration) string {
	t.Helper()
	end := time.Now().Add(within)
	for {
		if b, err := os.ReadFile(f.path(name)); err == nil {
			if line, _, whole := strings.Cut(string(b), "\n"); whole {
				return line
			}
		}
		if time.Now().After(end) {
			t.Fatalf("no whole line in %s within %v", name, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fixture) touch(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(f.path(name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// get reads key on master i ("" when absent).
func (f *fixture) get(t *testing.T, i int, key string) string {
	t.Helper()
	v, err := redis.String(f.servers[i].Do("GET", key))
	if err != nil && !errors.Is(err, redis.ErrNil) {
		t.Fatalf("GET %s on master %d: %v", key, i, err)
	}
	return v
}

// holding counts the masters whose key holds value.
func (f *fixture) holding(t *testing.T, key, value string) int {
	t.Helper()
	n := 0
	for i := range f.servers {
		if f.get(t, i, key) == value {
			n++
		}
	}
	return n
}

// released fails unless no master holds key any more.
func (f *fixture) released(t *testing.T, key string) {
	t.Helper()
	for i := range f.servers {
		if v := f.get(t, i, key); v != "" {
			t.Fatalf("master %d still holds %s = %q after the run", i, key, v)
		}
	}
}

func (f *fixture) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Action)
	}
	return out
}

func (f *fixture) run(j Job) Result { return Run(context.Background(), f.pools, testOpts, j) }

func TestTwoRunsStartedTogetherOnlyOneRuns(t *testing.T) {
	f := newFixture(t, 3)
	type ended struct {
		i int
		r Result
	}
	owners := []string{"worker-a", "worker-b"}
	results := make(chan ended, 2)
	start := make(chan struct{})
	for i, owner := range owners {
		j := f.job("nightly", `echo "$REDLOCK_VALUE" >> "$D/ran"; while [ ! -e "$D/stop" ]; do sleep 0.02; done`)
		j.Owner = owner
		go func() {
			<-start
			results <- ended{i, f.run(j)}
		}()
	}
	close(start)
	// The loser returns at once (the winner runs until told to stop).
	var loser ended
	select {
	case loser = <-results:
	case <-time.After(10 * time.Second):
		t.Fatal("neither run returned within 10s")
	}
	f.touch(t, "stop")
	winner := <-results
	if winner.r.Code != 0 || winner.r.Err != nil {
		t.Fatalf("winner: %+v (loser %+v)", winner.r, loser.r)
	}
	ran := f.lines("ran")
	if len(ran) != 1 || ran[0] != winner.r.Value {
		t.Fatalf("commands run: %q, want only the winner's %q", ran, winner.r.Value)
	}
	var held *HeldError
	wantOwner := owners[winner.i]
	if loser.r.Code != ExitNotAcquired || !errors.As(loser.r.Err, &held) || held.Owner != wantOwner || !errors.Is(loser.r.Err, redlock.ErrNotAcquired) {
		t.Fatalf("loser: %+v, want exit 1 with a HeldError naming %s", loser.r, wantOwner)
	}
	if msg := loser.r.Err.Error(); !strings.Contains(msg, "is held by "+wantOwner) || strings.Contains(msg, "\n") {
		t.Fatalf("loser's message %q: want one line naming %s", msg, wantOwner)
	}
	if loser.r.Value != "" {
		t.Fatalf("loser reports a lock value %q", loser.r.Value)
	}
	if got := f.actions(); strings.Join(got, ",") != Acquired+","+Released {
		t.Fatalf("events %v: want one acquire and one release", got)
	}
	f.released(t, "nightly")
}

func TestWaitRunsAfterTheHolderFinishes(t *testing.T) {
	f := newFixture(t, 3)
	a := f.job("deploy", `echo "a start" >> "$D/log"; while [ ! -e "$D/stop" ]; do sleep 0.02; done; echo "a end" >> "$D/log"`)
	a.Owner = "first"
	ares := make(chan Result, 1)
	go func() { ares <- f.run(a) }()
	f.waitFile(t, "log", 10*time.Second)

	// A short wait runs out while the lock is held, and names the holder.
	short := f.job("deploy", `echo "short" >> "$D/log"`)
	short.Wait = 400 * time.Millisecond
	r := f.run(short)
	var held *HeldError
	if r.Code != ExitNotAcquired || !errors.As(r.Err, &held) || held.Owner != "first" || !strings.Contains(r.Err.Error(), "after waiting") {
		t.Fatalf("short wait: %+v", r)
	}

	b := f.job("deploy", `echo "b start" >> "$D/log"`)
	b.Wait = 20 * time.Second
	bres := make(chan Result, 1)
	go func() { bres <- f.run(b) }()
	time.Sleep(300 * time.Millisecond) // b is waiting now (if it ran, the log says so)
	f.touch(t, "stop")
	if r := <-ares; r.Code != 0 {
		t.Fatalf("first run: %+v", r)
	}
	if r := <-bres; r.Code != 0 || r.Err != nil {
		t.Fatalf("waiting run: %+v", r)
	}
	if got := strings.Join(f.lines("log"), ","); got != "a start,a end,b start" {
		t.Fatalf("order %q: the waiting run must start after the first finished", got)
	}
	f.released(t, "deploy")
}

func TestSignalEndsTheWait(t *testing.T) {
	f := newFixture(t, 3)
	hold := f.job("held", `touch "$D/up"; while [ ! -e "$D/stop" ]; do sleep 0.02; done`)
	done := make(chan Result, 1)
	go func() { done <- f.run(hold) }()
	f.waitFile(t, "up", 10*time.Second)

	sig := make(chan os.Signal, 1)
	w := f.job("held", `touch "$D/ran"`)
	w.Wait = 30 * time.Second
	w.Signals = sig
	wres := make(chan Result, 1)
	go func() { wres <- f.run(w) }()
	time.Sleep(200 * time.Millisecond)
	sig <- syscall.SIGINT
	select {
	case r := <-wres:
		if r.Code != 128+int(syscall.SIGINT) || r.Value != "" || !strings.Contains(r.Err.Error(), "interrupt") {
			t.Fatalf("interrupted wait: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not end the wait")
	}
	if _, err := os.Stat(f.path("ran")); err == nil {
		t.Fatal("the interrupted run started its command")
	}
	f.touch(t, "stop")
	<-done
}

func TestLockKeptAliveThroughManyTTLs(t *testing.T) {
	f := newFixture(t, 3)
	j := f.job("long", `echo "$REDLOCK_VALUE" > "$D/value"; sleep 2.6; touch "$D/ending"; exit 7`)
	j.TTL = 800 * time.Millisecond // more than 3 TTLs while the command runs
	res := make(chan Result, 1)
	go func() { res <- f.run(j) }()
	value := f.waitLine(t, "value", 10*time.Second)
	polls := 0
	for {
		select {
		case r := <-res:
			if r.Code != 7 || r.Err != nil || r.Value != value {
				t.Fatalf("run: %+v, want the command's exit code 7", r)
			}
			if polls < 20 {
				t.Fatalf("only %d polls while the command ran", polls)
			}
			f.released(t, "long")
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.events) != 2 || f.events[1].Action != Released || f.events[1].ExitCode != 7 {
				t.Fatalf("events %+v", f.events)
			}
			for _, e := range f.events {
				for _, n := range e.Nodes {
					if n.Outcome != redlock.OK || len(e.Nodes) != 3 {
						t.Fatalf("%s: master %d: %v %v", e.Action, n.Master, n.Outcome, n.Err)
					}
				}
			}
			if e := f.events[0]; e.Value != value || e.Validity <= 0 || e.Validity > j.TTL || e.Quorum != 2 {
				t.Fatalf("acquire event %+v", e)
			}
			return
		default:
		}
		// Never seen free while the command runs: a quorum holds the value. The
		// command marks its end before it exits, and only then may the lock go.
		if n := f.holding(t, "long", value); n < 2 {
			if _, err := os.Stat(f.path("ending")); err == nil {
				r := <-res
				res <- r
				continue
			}
			t.Fatalf("poll %d: only %d of 3 masters hold the value while the command runs", polls, n)
		}
		polls++
		time.Sleep(25 * time.Millisecond)
	}
}

// The variables that hold the masters' passwords are not in the command's environment;
// everything else is, with the lock's own.
func TestSecretVariablesKeptFromTheCommand(t *testing.T) {
	f := newFixture(t, 3)
	j := f.job("env", `env > "$D/env"`)
	j.Env = append(j.Env, "REDLOCK_M1_PASSWORD=s3cr3t-pw", "SENTINEL_PW=other-secret", "KEEP_ME=1")
	j.Unset = []string{"REDLOCK_M1_PASSWORD", "SENTINEL_PW"}
	if res := f.run(j); res.Code != 0 {
		t.Fatalf("run: %+v", res)
	}
	env := strings.Join(f.lines("env"), "\n")
	if strings.Contains(env, "s3cr3t") || strings.Contains(env, "other-secret") || !strings.Contains(env, "KEEP_ME=1") || !strings.Contains(env, "REDLOCK_VALUE=") {
		t.Errorf("the command's environment:\n%s", env)
	}
}

// A user that may SET but not run scripts could take the lock, but neither extend nor
// release it: run proves the extension first (of a value no lock holds), takes no lock,
// never starts the command, and says which permission is missing (exit 2, a config
// error).
func TestRunRefusesWithoutScriptPermission(t *testing.T) {
	s := redistest.StartN(t, 3, redistest.Options{Users: []string{"setonly on >pw ~* +@all -eval -evalsha -script"}})
	var pools []*redis.Pool
	for _, m := range s {
		p := m.NewPool("setonly", "pw")
		t.Cleanup(func() { p.Close() })
		pools = append(pools, p)
	}
	f := &fixture{servers: s, pools: pools, dir: t.TempDir()}
	res := f.run(f.job("noperm", `touch "$D/ran"`))
	if res.Code != ExitUsage || res.Err == nil || !strings.Contains(res.Err.Error(), "NOPERM") || !strings.Contains(res.Err.Error(), "+evalsha") {
		t.Fatalf("run without script permission: %+v", res)
	}
	if _, err := os.Stat(f.path("ran")); err == nil {
		t.Fatal("the command ran although the lock could not be kept")
	}
	for _, m := range s {
		if n, err := redis.Int(m.Do("DBSIZE")); err != nil || n != 0 {
			t.Errorf("%s holds %d keys after the refusal (%v), want none: no lock taken", m.Addr, n, err)
		}
	}
}
