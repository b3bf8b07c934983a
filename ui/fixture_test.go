package ui

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
)

var update = flag.Bool("update", false, "rewrite ui/testdata/*.golden from the current output")

var t0 = time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)

func testConfig() *config.Config {
	cfg := &config.Config{Name: "prod-eu", LabelColor: "red"}
	cfg.Lock.DefaultTTL = 30 * time.Second
	cfg.Lock.NodeTimeout = 50 * time.Millisecond
	cfg.Inspect.PollInterval = time.Second
	cfg.Inspect.Timeout = 500 * time.Millisecond
	for i := 1; i <= 5; i++ {
		cfg.Masters = append(cfg.Masters, config.MasterConfig{Name: fmt.Sprintf("m%d", i), Addr: fmt.Sprintf("10.0.0.%d:6379", i)})
	}
	return cfg
}

func ptr[T any](v T) *T { return &v }

// hex32 is a deterministic 32-hex-digit random part for values.
func hex32(i int) string { return fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15) }

// res builds a resource from per-master (value, pttl) pairs; "" value = absent.
func res(name, state string, value string, holders int, nodes ...inspect.Node) inspect.Resource {
	for i := range nodes {
		nodes[i].Master = fmt.Sprintf("m%d", i+1)
		if nodes[i].Type == "" {
			nodes[i].Type = "string"
			if nodes[i].PTTLMs == -2 {
				nodes[i].Type = "none"
			}
		}
	}
	owner := ""
	if i := strings.IndexByte(value, '#'); i > 0 {
		owner = value[:i]
	}
	return inspect.Resource{Resource: name, Key: name, State: state, Value: value, Owner: owner, Holders: holders, Nodes: nodes}
}

func same(value string, pttls ...int64) []inspect.Node {
	out := make([]inspect.Node, len(pttls))
	for i, p := range pttls {
		if p == -2 {
			out[i] = inspect.Node{PTTLMs: -2}
			continue
		}
		out[i] = inspect.Node{Value: value, PTTLMs: p}
	}
	return out
}

// testSnapshot is a small snapshot with every state and anomaly the console shows.
func testSnapshot() *inspect.Snapshot {
	billing := "worker-7:4242#" + hex32(1)
	mail := "mailer:99#" + hex32(2) + "#42"
	stray := "mailer:17#" + hex32(3) + "#41"
	a := "sync-a:10#" + hex32(4)
	b := "sync-b:11#" + hex32(5)
	s := &inspect.Snapshot{TakenAt: t0, Quorum: 3, Complete: true}
	for i := 1; i <= 5; i++ {
		m := inspect.Master{Name: fmt.Sprintf("m%d", i), Addr: fmt.Sprintf("10.0.0.%d:6379", i), Up: true,
			RTTMs: 0.4 + float64(i)/10, ClockOffsetMs: float64(i) - 3, ClockUncertaintyMs: 0.3,
			ClockRatePPM: ptr(float64(i * 3)), UptimeS: 86400*3 + int64(i)*3600, Role: "master"}
		s.Masters = append(s.Masters, m)
	}
	s.Masters[2].RTTMs = 31
	s.Masters[4].ClockRatePPM = ptr(10400.0)
	s.Masters[4].Findings = []inspect.Finding{{Code: "clock-rate", Severity: "crit", Master: "m5", Message: "clock runs 1.04% fast"},
		{Code: "evicting-policy", Severity: "warn", Master: "m5", Message: "maxmemory-policy allkeys-lru"}}

	billingNodes := same(billing, 23100, 23080, 23090, 23110, 23050)
	mailNodes := same(mail, 8100, 8120, 8090, -2, 0)
	mailNodes[4] = inspect.Node{Value: stray, PTTLMs: 1200}
	cache := same("builder:5#"+hex32(6), 4000, 3990, -2, -2, -2)
	split := same(a, 9000, 9010, -2, -2, -2)
	split[2] = inspect.Node{Value: b, PTTLMs: 9500}
	split[3] = inspect.Node{Value: b, PTTLMs: 9400}
	legacy := same("cron:1#"+hex32(7), -1, -1, -1, -1, -1)
	foreign := make([]inspect.Node, 5)
	for i := range foreign {
		foreign[i] = inspect.Node{Type: "hash", PTTLMs: 30000}
	}
	s.Resources = []inspect.Resource{
		res("billing:nightly", inspect.StateHeld, billing, 5, billingNodes...),
		res("cache:rebuild", inspect.StatePartial, "builder:5#"+hex32(6), 2, cache...),
		res("evil\x1b[31m:name", inspect.StateHeld, "x\x1b]0;pwned\x07#"+hex32(8), 5, same("x\x1b]0;pwned\x07#"+hex32(8), 5000, 5000, 5000, 5000, 5000)...),
		res("jobs:email", inspect.StateHeld, mail, 3, mailNodes...),
		res("legacy:cron", inspect.StateNoTTL, "cron:1#"+hex32(7), 5, legacy...),
		res("orders:sync", inspect.StateSplit, a, 2, split...),
		res("redisson:lock", inspect.StateForeign, "", 0, foreign...),
		res("reports:weekly", inspect.StateFree, "", 0, same("", -2, -2, -2, -2, -2)...),
	}
	for i := 1; i <= 24; i++ {
		v := fmt.Sprintf("worker-%d:%d#%s", i%4, 1000+i, hex32(100+i))
		p := int64(1000 * i)
		s.Resources = append(s.Resources, res(fmt.Sprintf("shard:%02d", i), inspect.StateHeld, v, 5, same(v, p, p+3, p+1, p+2, p-4)...))
	}
	r := &s.Resources[0]
	r.ValidityMs, r.TTLSpreadMs = 22800, 60
	r = &s.Resources[3]
	r.Token, r.ValidityMs, r.TTLSpreadMs = 42, 7800, 30
	r.Anomalies = []inspect.Anomaly{{Code: "stray-value", Master: "m5", Message: "another value on a minority"}}
	s.Resources[4].Anomalies = []inspect.Anomaly{{Code: "no-ttl-node", Master: "m1", Message: "no expiry"}}
	for i := 8; i < len(s.Resources); i++ {
		s.Resources[i].ValidityMs = int64(1000*(i-7)) - 300
		s.Resources[i].TTLSpreadMs = 7
	}
	s.Resources[2].ValidityMs, s.Resources[2].TTLSpreadMs = 4700, 0
	summarize(s)
	return s
}

func summarize(s *inspect.Snapshot) {
	sum := inspect.Summary{Resources: len(s.Resources)}
	for _, r := range s.Resources {
		switch r.State {
		case inspect.StateHeld:
			sum.Held++
		case inspect.StatePartial:
			sum.Partial++
		case inspect.StateSplit:
			sum.Split++
		case inspect.StateNoTTL:
			sum.NoTTL++
		case inspect.StateForeign:
			sum.Foreign++
		case inspect.StateFree:
			sum.Free++
		}
	}
	for _, m := range s.Masters {
		if m.Up {
			sum.MastersUp++
		}
		sum.Findings += len(m.Findings)
	}
	s.Summary = sum
}

// bigSnapshot has n resources over 5 masters, with a mix of states and 500 owners,
// in name order as the poller returns them.
func bigSnapshot(n int) *inspect.Snapshot {
	s := testSnapshot()
	s.Resources = make([]inspect.Resource, n)
	nodes := make([]inspect.Node, 5*n)
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("svc-%d:%d#%s", i%500, 100+i%500, hex32(i))
		ns := nodes[5*i : 5*i+5 : 5*i+5]
		p := int64((i * 7919) % 60000)
		for j := range ns {
			ns[j] = inspect.Node{Master: fmt.Sprintf("m%d", j+1), Value: v, PTTLMs: p + int64(j), Type: "string"}
		}
		st, holders := inspect.StateHeld, 5
		switch i % 50 {
		case 7:
			st, holders = inspect.StatePartial, 2
			ns[2], ns[3], ns[4] = inspect.Node{Master: "m3", PTTLMs: -2, Type: "none"}, inspect.Node{Master: "m4", PTTLMs: -2, Type: "none"}, inspect.Node{Master: "m5", PTTLMs: -2, Type: "none"}
		case 13:
			st = inspect.StateNoTTL
			ns[0].PTTLMs = -1
		}
		s.Resources[i] = inspect.Resource{Resource: fmt.Sprintf("job:%07d", i), Key: fmt.Sprintf("job:%07d", i), State: st,
			Value: v, Owner: v[:strings.IndexByte(v, '#')], Holders: holders, ValidityMs: p - 100, TTLSpreadMs: int64(i % 9), Nodes: ns}
	}
	summarize(s)
	return s
}

// fakeActions records calls; fail makes every call fail the test (read-only tests).
type fakeActions struct {
	t     testing.TB
	fail  bool
	mu    sync.Mutex
	calls []string
	err   error // returned by every call when set
}

func (f *fakeActions) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		f.t.Errorf("action called in read-only mode: %s", s)
	}
	f.calls = append(f.calls, s)
}

func (f *fakeActions) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeActions) result(action, resource, value string) admin.ActionResult {
	r := admin.ActionResult{Time: t0, Operator: "op@host", Action: action, Resource: resource, Value: value, Quorum: 3, Done: 5, Up: 5}
	for i := 1; i <= 5; i++ {
		r.Nodes = append(r.Nodes, admin.NodeOutcome{Master: fmt.Sprintf("m%d", i), Outcome: "ok"})
	}
	return r
}

func (f *fakeActions) Acquire(ctx context.Context, resource string, ttl time.Duration, owner string) (*redlock.Lock, admin.ActionResult, error) {
	f.record(fmt.Sprintf("acquire %s %s", resource, ttl))
	r := f.result("acquire", resource, "console:1#"+hex32(999))
	r.Validity = ttl - time.Millisecond
	return &redlock.Lock{}, r, f.err
}

func (f *fakeActions) Extend(ctx context.Context, resource, value string, ttl time.Duration) (admin.ActionResult, error) {
	f.record(fmt.Sprintf("extend %s %s %s", resource, value, ttl))
	return f.result("extend", resource, value), f.err
}

func (f *fakeActions) Renew(ctx context.Context, l *redlock.Lock, ttl time.Duration) (admin.ActionResult, error) {
	if l == nil {
		f.t.Errorf("renew without the acquired lock")
		return admin.ActionResult{}, errors.New("no lock")
	}
	f.record(fmt.Sprintf("renew %s", ttl))
	return f.result("extend", "", ""), f.err
}

func (f *fakeActions) Release(ctx context.Context, resource, value string) (admin.ActionResult, error) {
	f.record(fmt.Sprintf("release %s %s", resource, value))
	return f.result("release", resource, value), f.err
}

func (f *fakeActions) ForceRelease(ctx context.Context, p admin.ForcePlan) (admin.ActionResult, error) {
	action := admin.ActionForceRelease
	if p.AnyValue {
		action = admin.ActionForceReleaseAny
	}
	if p.Err != nil {
		f.t.Errorf("a refused plan was carried out: %v", p.Err)
	}
	if p.AnyValue {
		f.record(fmt.Sprintf("%s %s", action, p.Resource))
		return f.result(action, p.Resource, ""), f.err
	}
	f.record(fmt.Sprintf("%s %s %s", action, p.Resource, p.Value))
	return f.result(action, p.Resource, p.Value), f.err
}

// pendingTick is what a tick command yields in tests: recorded, never fed back
// unless the test fires it.
type pendingTick struct {
	d   time.Duration
	msg tea.Msg
}

// harness drives a Model synchronously: commands run at once, ticks are recorded.
type harness struct {
	t     testing.TB
	m     *Model
	polls int
	snaps []*inspect.Snapshot // returned by successive polls (the last repeats)
	ticks []pendingTick
	quit  bool
}

func newHarness(t testing.TB, cfg *config.Config, acts Actions, w, h int) *harness {
	return newHarnessWith(t, cfg, acts, w, h, nil)
}

// newHarnessWith is newHarness with Options changed by set first.
func newHarnessWith(t testing.TB, cfg *config.Config, acts Actions, w, h int, set func(*Options)) *harness {
	hs := &harness{t: t, snaps: []*inspect.Snapshot{testSnapshot()}}
	o := Options{
		Config: cfg,
		Poll: func(ctx context.Context) *poll.Stream {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("poll without a deadline")
			}
			i := min(hs.polls, len(hs.snaps)-1)
			hs.polls++
			return poll.StreamOf(hs.snaps[i])
		},
		Actions: acts,
		Now:     func() time.Time { return t0.Add(400 * time.Millisecond) },
	}
	if set != nil {
		set(&o)
	}
	hs.m = New(o)
	hs.m.after = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return pendingTick{d: d, msg: fn(t0.Add(d))} }
	}
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.run(hs.m.Init())
	return hs
}

// run executes cmd and everything it leads to, except ticks.
func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case pendingTick:
		h.ticks = append(h.ticks, msg)
	case tea.QuitMsg:
		h.quit = true
	default:
		h.send(msg)
	}
}

func (h *harness) send(msg tea.Msg) {
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

// fire delivers and forgets the recorded ticks whose message matches keep.
func (h *harness) fire(keep func(tea.Msg) bool) int {
	ticks := h.ticks
	h.ticks = nil
	n := 0
	for _, tk := range ticks {
		if keep(tk.msg) {
			n++
			h.send(tk.msg)
		} else {
			h.ticks = append(h.ticks, tk)
		}
	}
	return n
}

// key sends one key press: a name such as "enter", "esc", "ctrl+c", "up", or text.
func (h *harness) key(k string) { h.send(keyMsg(k)) }

// typeText sends each rune of s as a key press.
func (h *harness) typeText(s string) {
	for _, r := range s {
		h.key(string(r))
	}
}

var namedKeys = map[string]rune{
	"enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab, "backspace": tea.KeyBackspace,
	"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
	"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
	"space": tea.KeySpace, "delete": tea.KeyDelete,
}

func keyMsg(k string) tea.KeyPressMsg {
	if strings.HasPrefix(k, "ctrl+") && len(k) == 6 {
		return tea.KeyPressMsg{Code: rune(k[5]), Mod: tea.ModCtrl}
	}
	if k == "shift+tab" {
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	}
	if c, ok := namedKeys[k]; ok {
		if c == tea.KeySpace {
			return tea.KeyPressMsg{Code: c, Text: " "}
		}
		return tea.KeyPressMsg{Code: c}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// screen is the current view, ANSI stripped, trailing spaces trimmed.
func (h *harness) screen() string {
	v := h.m.View()
	lines := strings.Split(ansi.Strip(v.Content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ui -run %s -update to create it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden (rerun with -update if intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
