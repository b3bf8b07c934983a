package lockrun

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock"
)

// processGone reports whether pid has exited (a zombie nobody reaped counts as gone).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

func unixNanoFile(t *testing.T, f *fixture, name string) time.Time {
	t.Helper()
	l := f.lines(name)
	if len(l) == 0 {
		t.Fatalf("%s is empty", name)
	}
	ns, err := strconv.ParseInt(l[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return time.Unix(0, ns)
}

// A majority of masters dies while the command runs: the next extension fails, the
// command's group gets SIGTERM within one extension interval, and a command (and a
// grandchild) that ignore it are killed when the grace ends.
func TestMajorityLostStopsTheWholeGroup(t *testing.T) {
	f := newFixture(t, 3)
	j := f.job("batch", `
trap 'date +%s%N >> "$D/term"' TERM
sh -c "trap '' TERM; exec sleep 1000" &
echo $! > "$D/grandchild"
touch "$D/up"
while :; do sleep 0.05; done`)
	j.TTL = 1200 * time.Millisecond
	j.Grace = 800 * time.Millisecond
	res := make(chan Result, 1)
	go func() { res <- f.run(j) }()
	f.waitFile(t, "up", 10*time.Second)
	gc, err := strconv.Atoi(f.lines("grandchild")[0])
	if err != nil || processGone(gc) {
		t.Fatalf("grandchild %v not running (%v)", gc, err)
	}

	killed := time.Now()
	f.servers[0].Kill()
	f.servers[1].Kill()
	var r Result
	select {
	case r = <-res:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end after the majority died")
	}
	ended := time.Now()
	if r.Code != ExitLost || !errors.Is(r.Err, redlock.ErrLockLost) {
		t.Fatalf("run: %+v, want exit %d and ErrLockLost", r, ExitLost)
	}
	term := unixNanoFile(t, f, "term")
	interval := j.TTL / 3
	if d := term.Sub(killed); d > interval+500*time.Millisecond+time.Second {
		t.Fatalf("SIGTERM came %v after the masters died; the extension interval is %v", d, interval)
	}
	if d := ended.Sub(term); d < j.Grace-150*time.Millisecond || d > j.Grace+2*time.Second {
		t.Fatalf("the command ignoring SIGTERM was killed %v after it, grace %v", d, j.Grace)
	}
	if !processGone(gc) {
		t.Fatalf("grandchild %d still runs after the lock was lost", gc)
	}
	acts := f.actions()
	if strings.Join(acts, ",") != Acquired+","+Lost {
		t.Fatalf("events %v", acts)
	}
	f.mu.Lock()
	lost := f.events[1]
	f.mu.Unlock()
	if lost.ExitCode != ExitLost || !errors.Is(lost.Err, redlock.ErrLockLost) || lost.Nodes[0].Outcome == redlock.OK {
		t.Fatalf("lost event %+v", lost)
	}
}

// SIGTERM to the run reaches the command's group; the lock stays held while the command
// finishes, and is released after it exited.
func TestSignalReachesCommandThenRelease(t *testing.T) {
	f := newFixture(t, 3)
	sig := make(chan os.Signal, 1)
	j := f.job("report", `
trap 'touch "$D/got"; sleep 0.4; exit 0' TERM
echo "$REDLOCK_VALUE" > "$D/value"
while :; do sleep 0.05; done`)
	j.TTL = 900 * time.Millisecond
	j.Grace = 5 * time.Second
	j.Signals = sig
	res := make(chan Result, 1)
	go func() { res <- f.run(j) }()
	value := f.waitLine(t, "value", 10*time.Second)
	sig <- syscall.SIGTERM
	f.waitFile(t, "got", 5*time.Second)
	if n := f.holding(t, "report", value); n < 2 {
		t.Fatalf("the lock is not held while the command handles SIGTERM (%d masters)", n)
	}
	r := <-res
	if r.Code != 0 || r.Err != nil {
		t.Fatalf("run: %+v, want the command's exit code 0", r)
	}
	f.released(t, "report")

	// A command that dies of the forwarded signal reports it as a shell does.
	j = f.job("report", `touch "$D/up2"; exec sleep 30`)
	j.Signals = sig
	go func() { res <- f.run(j) }()
	f.waitFile(t, "up2", 10*time.Second)
	sig <- syscall.SIGTERM // (SIGINT may be ignored from the start: a background job's is)
	if r := <-res; r.Code != 128+int(syscall.SIGTERM) {
		t.Fatalf("run: %+v, want %d", r, 128+int(syscall.SIGTERM))
	}
	f.released(t, "report")
}

func TestFencedTokenIncreasesAcrossRuns(t *testing.T) {
	f := newFixture(t, 3)
	script := `printf '%s %s %s %s\n' "$REDLOCK_RESOURCE" "$REDLOCK_VALUE" "$REDLOCK_VALIDITY_MS" "${REDLOCK_TOKEN-unset}" >> "$D/env"`
	opts := append(append([]redlock.Option{}, testOpts...), redlock.WithFencing())
	for range 3 {
		j := f.job("fenced", script)
		j.Env = append(j.Env, "REDLOCK_TOKEN=999") // inherited from an outer run: replaced
		if r := Run(t.Context(), f.pools, opts, j); r.Code != 0 || r.Token <= 0 {
			t.Fatalf("fenced run: %+v", r)
		}
	}
	j := f.job("fenced", script)
	j.Env = append(j.Env, "REDLOCK_TOKEN=999", "REDLOCK_VALUE=outer")
	if r := f.run(j); r.Code != 0 || r.Token != 0 {
		t.Fatalf("unfenced run: %+v", r)
	}
	lines := f.lines("env")
	if len(lines) != 4 {
		t.Fatalf("env lines %q", lines)
	}
	var last int64
	for i, line := range lines {
		fields := strings.Fields(line)
		if len(fields) != 4 || fields[0] != "fenced" {
			t.Fatalf("run %d env %q", i, line)
		}
		owner, token, ok := redlock.ParseValue(fields[1])
		validity, err := strconv.ParseInt(fields[2], 10, 64)
		if !ok || owner == "" || err != nil || validity <= 0 || validity > j.TTL.Milliseconds() {
			t.Fatalf("run %d env %q: value or validity wrong", i, line)
		}
		if i == 3 {
			if fields[3] != "unset" || token != 0 {
				t.Fatalf("unfenced run env %q: REDLOCK_TOKEN must be unset", line)
			}
			continue
		}
		if strconv.FormatInt(token, 10) != fields[3] || token <= last {
			t.Fatalf("run %d env %q: token not the value's, or not above %d", i, line, last)
		}
		last = token
	}
}

func TestCommandThatCannotStart(t *testing.T) {
	f := newFixture(t, 3)
	plain := f.path("plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"redlockctl-no-such-command"}, ExitNotFound},
		{[]string{f.path("missing")}, ExitNotFound},
		{[]string{plain}, ExitCannotExecute},
		{[]string{f.dir}, ExitCannotExecute},
	} {
		j := f.job("cron", "")
		j.Args = c.args
		f.events = nil
		r := f.run(j)
		if r.Code != c.code || r.Err == nil || r.Value == "" {
			t.Fatalf("%v: %+v, want exit %d after acquiring", c.args, r, c.code)
		}
		if got := f.actions(); strings.Join(got, ",") != Acquired+","+Released || f.events[1].ExitCode != c.code {
			t.Fatalf("%v: events %+v", c.args, f.events)
		}
		f.released(t, "cron")
	}
}

func TestHolderNamed(t *testing.T) {
	f := newFixture(t, 3)
	for _, c := range []struct{ value, want string }{
		{"6f1c9a2e-5a4b-4d1e-9c0a-3e8f7d6b5a41", "is held by unknown owner"},
		{"ops@host-7#0123456789abcdef0123456789abcdef", "is held by ops@host-7 (3 of 3 masters)"},
		{"ops#0123456789abcdef0123456789abcdef#12", "is held by ops (3 of 3 masters)"},
	} {
		for _, s := range f.servers {
			if _, err := s.Do("SET", "lock:job", c.value, "PX", 10000); err != nil {
				t.Fatal(err)
			}
		}
		j := f.job("job", `touch "$D/ran"`)
		r := Run(t.Context(), f.pools, append(append([]redlock.Option{}, testOpts...), redlock.WithKeyPrefix("lock:")), j)
		if r.Code != ExitNotAcquired || r.Err == nil || !strings.Contains(r.Err.Error(), c.want) {
			t.Fatalf("value %q: %+v, want %q", c.value, r, c.want)
		}
	}
	if _, err := os.Stat(f.path("ran")); err == nil {
		t.Fatal("a command ran without the lock")
	}
	if got := f.actions(); len(got) != 0 {
		t.Fatalf("events without a lock: %v", got)
	}
	// Fewer than a quorum of masters: said so, not "held".
	f.servers[0].Kill()
	f.servers[1].Kill()
	r := f.run(f.job("other", `touch "$D/ran"`))
	if r.Code != ExitNotAcquired || !strings.Contains(r.Err.Error(), "only 1 of 3 masters answered") {
		t.Fatalf("quorum down: %+v", r)
	}
}

func TestJobUsage(t *testing.T) {
	f := newFixture(t, 1)
	for _, c := range []struct {
		name string
		edit func(*Job)
	}{
		{"empty command", func(j *Job) { j.Args = nil }},
		{"empty command", func(j *Job) { j.Args = []string{""} }},
		{"empty resource", func(j *Job) { j.Resource = "" }},
		{"ttl", func(j *Job) { j.TTL = 0 }},
		{"wait", func(j *Job) { j.Wait = -time.Second }},
		{"grace", func(j *Job) { j.Grace = -time.Second }},
		{"WithOwner", func(j *Job) { j.Owner = "two words" }},
		{"fence", func(j *Job) { j.Resource = "x:fence" }},
		{"drift", func(j *Job) { j.TTL = 2 * time.Millisecond }},
		// The wait runs out during the permission check, before the TTL is refused:
		// still usage (it was taken for "not acquired" on a loaded machine).
		{"drift", func(j *Job) { j.TTL, j.Wait = 2*time.Millisecond, time.Nanosecond }},
	} {
		j := f.job("usage", `touch "$D/ran"`)
		c.edit(&j)
		if r := f.run(j); r.Code != ExitUsage || r.Err == nil || !strings.Contains(r.Err.Error(), c.name) {
			t.Fatalf("%s: %+v", c.name, r)
		}
	}
	if _, err := os.Stat(f.path("ran")); err == nil {
		t.Fatal("a command ran on bad usage")
	}
}
