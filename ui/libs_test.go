package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
)

const (
	libHolder = "6f1c3a2e-9b4d-4c1e-8f2a-0d9e7b6a5c41:57"
	libW1     = "0a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3:12"
	libW2     = "0a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3:13"
)

// libsSnapshot has locks of several libraries, decoded the way the poller decodes them.
func libsSnapshot() *inspect.Snapshot {
	s := testSnapshot()
	fair := locks.Entry{Key: "orders", Type: locks.TypeHash, Fields: map[string]string{libHolder: "2"}, PTTLMs: 25000}
	rel := map[string]locks.Entry{
		"redisson_lock_queue:{orders}": {Key: "redisson_lock_queue:{orders}", Type: locks.TypeList, Items: []string{libW1, libW2}, PTTLMs: -1},
	}
	l := locks.Decode(fair, rel, t0)
	r := res("orders", inspect.StateHeld, libHolder, 5)
	for i := 1; i <= 5; i++ {
		r.Nodes = append(r.Nodes, inspect.Node{Master: fmt.Sprintf("m%d", i), Type: "hash", Value: libHolder, PTTLMs: 25000, Lock: &l})
	}
	r.Owner, r.Library, r.Kind, r.LibraryEvidence, r.Count = l.Owner, l.Library, l.Kind, l.Evidence, l.Count
	rs := res("jobs:sync", inspect.StateHeld, "q83vEjRWeJCrze8SNFZ4kA==", 5, same("q83vEjRWeJCrze8SNFZ4kA==", 9000, 9000, 9000, 9000, 9000)...)
	rs.Library, rs.LibraryEvidence = locks.Redsync, "value is base64 of 16 bytes"
	s.Resources = append(s.Resources, r, rs)
	for i := range s.Resources {
		if s.Resources[i].Library == "" && s.Resources[i].Value != "" {
			s.Resources[i].Library = locks.Redlockctl
		}
	}
	return s
}

func TestLibraryColumnAndDetail(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 160, 40)
	h.snaps = append(h.snaps, libsSnapshot())
	h.key("r")
	table := h.screen()
	golden(t, "libs-table-160x40", table)
	if !strings.Contains(table, " LIB ") || !strings.Contains(table, "redisson") || !strings.Contains(table, "redsync") {
		t.Fatalf("no LIB column with the libraries:\n%s", table)
	}
	// The Redisson row's master cells show its PTTL, not "hash".
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, "orders ") && strings.Contains(line, "redisson") && strings.Contains(line, "hash") {
			t.Errorf("a recognised hash lock shows its type instead of its PTTL: %q", line)
		}
	}
	h.key("/")
	h.typeText("orders")
	h.key("enter")
	h.key("enter")
	detail := h.screen()
	golden(t, "libs-detail-160x40", detail)
	i1, i2 := strings.Index(detail, "waiter 1: "+libW1), strings.Index(detail, "waiter 2: "+libW2)
	if i1 < 0 || i2 < i1 {
		t.Errorf("waiters not shown in queue order:\n%s", detail)
	}
	for _, want := range []string{"library redisson fair-lock", "reentrancy: 2", "release redisson-unlock"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, detail)
		}
	}
	h.key("D")
	dialog := h.screen()
	if !strings.Contains(dialog, "protocol redisson-unlock") {
		t.Fatalf("force-release plan does not name the protocol:\n%s", dialog)
	}
	h.typeText("orders")
	h.key("enter")
	if got := acts.Calls(); len(got) != 1 || got[0] != "force-release orders "+libHolder {
		t.Errorf("calls %v, want the owner-checked release of the observed holder", got)
	}
}

// A hash lock is renewed by its holder: the console offers no extend for it.
func TestNoExtendOfHashLocks(t *testing.T) {
	acts := &fakeActions{t: t}
	h := newHarness(t, testConfig(), acts, 160, 40)
	h.snaps = append(h.snaps, libsSnapshot())
	h.key("r")
	h.key("/")
	h.typeText("orders")
	h.key("enter")
	h.key("e")
	if h.m.dialog != nil || !strings.Contains(h.screen(), "its holder renews it") {
		t.Fatalf("extend offered for a Redisson hash lock:\n%s", h.screen())
	}
}

// A single-instance lock's LIB cell names its library and the master it is judged on,
// as the detail view does; a Redlock-scope row shows its library only.
func TestLibraryColumnSingleInstance(t *testing.T) {
	s := libsSnapshot()
	const py = "0c9f1a2e6b3d11f0a1b2c3d4e5f60718"
	r := res("py:report", inspect.StateHeld, py, 1, same(py, -2, -2, 25000, -2, -2)...)
	r.Library, r.Scope, r.Instances = "redis-py?", locks.ScopeSingle, []string{"m3"}
	s.Resources = append(s.Resources, r)
	s.Summary.SingleSummary.Held = 1
	for _, width := range []int{160, 200} {
		h := newHarness(t, testConfig(), &fakeActions{t: t}, width, 40)
		h.snaps = append(h.snaps, s)
		h.key("r")
		table := h.screen()
		found := false
		for _, line := range strings.Split(table, "\n") {
			switch {
			case strings.Contains(line, "py:report"):
				found = strings.Contains(line, "redis-py? single-instance on m3")
			case strings.Contains(line, "jobs:sync") && strings.Contains(line, "single-instance"):
				t.Errorf("%d columns: a Redlock-scope row names a single instance: %q", width, line)
			}
		}
		if !found {
			t.Errorf("%d columns: no LIB cell \"redis-py? single-instance on m3\":\n%s", width, table)
		}
	}
}

// A semaphore whose free permits Redis counts (Redisson's RPermitExpirableSemaphore)
// shows them after its held permits.
func TestScopeTextAvailablePermits(t *testing.T) {
	two := 2
	r := &inspect.Resource{State: inspect.StateSemaphore, Scope: locks.ScopeSingle, Instances: []string{"m2"}, Permits: 1, AvailablePermits: &two}
	if got, want := ScopeText(r), "single-instance on m2, held 1 permits, 2 available"; got != want {
		t.Errorf("ScopeText = %q, want %q", got, want)
	}
	r.AvailablePermits = nil
	if got, want := ScopeText(r), "single-instance on m2, held 1 permits"; got != want {
		t.Errorf("ScopeText without a count = %q, want %q", got, want)
	}
}
