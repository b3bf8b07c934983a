package carry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// findRow returns the row named resource, or nil.
func findRow(s *inspect.Snapshot, resource string) *inspect.Resource {
	for i := range s.Resources {
		if s.Resources[i].Resource == resource {
			return &s.Resources[i]
		}
	}
	return nil
}

// trackedMasters starts 3 masters and a poller over them with a short poll deadline
// (300 ms), so that a paused master is down within a poll.
func trackedMasters(t *testing.T) ([]*redistest.Server, *poll.Poller) {
	t.Helper()
	servers := redistest.StartN(t, 3, redistest.Options{})
	body := "[inspect]\ntimeout = \"300ms\"\n"
	for i, s := range servers {
		body += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, s.Addr)
	}
	cfg, _, err := config.Load(trackConfigFile(t, body))
	if err != nil {
		t.Fatal(err)
	}
	pools, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	p := poll.NewPoller(cfg, pools)
	t.Cleanup(func() { p.Close() })
	return servers, p
}

// TestTrackerKeepsUnreachableRows (real masters): lock:x is held on m1 only. Paused, m1
// stops answering, and the row stays, uncertain, with last_seen on m1 and a projected
// PTTL that counts down; resumed, the row is normal again; killed for longer than the
// projected TTL, the row leaves. An untracked poll of the paused master loses the row.
func TestTrackerKeepsUnreachableRows(t *testing.T) {
	servers, p := trackedMasters(t)
	var tr Tracker
	poll := func() *inspect.Snapshot { return tr.Track(p.Poll(context.Background())) }
	if _, err := servers[0].Do("SET", "x", "w1#0123456789abcdef0123456789abcdef", "PX", 3000); err != nil {
		t.Fatal(err)
	}
	s := poll()
	r := findRow(s, "x")
	if r == nil {
		t.Fatal("no row x in snapshot")
	}
	if r.Nodes[0].PTTLMs <= 0 || r.Nodes[0].LastSeen != nil {
		t.Fatalf("before the pause: %+v", r.Nodes[0])
	}
	sampled := r.Nodes[0].PTTLMs

	servers[0].Pause()
	var last int64 = sampled + 1
	for round := 0; round < 2; round++ {
		time.Sleep(200 * time.Millisecond)
		s = poll()
		r = findRow(s, "x")
		if r == nil {
			t.Fatalf("round %d: the row of the paused holder vanished", round)
		}
		ls := r.Nodes[0].LastSeen
		if !r.Uncertain || ls == nil || ls.Master != "m1" || ls.ProjectedPTTLMs <= 0 || ls.ProjectedPTTLMs >= last || r.Nodes[0].Error == "" {
			t.Fatalf("round %d: row %+v node %+v last_seen %+v; want uncertain, last seen on m1, projection below %d", round, r, r.Nodes[0], ls, last)
		}
		last = ls.ProjectedPTTLMs
	}
	if untracked := p.Poll(context.Background()); findRow(untracked, "x") != nil {
		t.Fatalf("an untracked poll kept the row: the test proves nothing")
	}
	servers[0].Resume()
	s = poll()
	if r = findRow(s, "x"); r == nil || r.Nodes[0].LastSeen != nil || r.Nodes[0].PTTLMs <= 0 || r.Uncertain {
		t.Fatalf("after resume: %+v", r)
	}

	servers[0].Kill()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		s = poll()
		r = findRow(s, "x")
		if r == nil {
			break
		}
		if r.Nodes[0].LastSeen == nil {
			t.Fatalf("killed holder: row without last_seen: %+v", r)
		}
		if time.Now().After(end) {
			t.Fatalf("the row outlived its projected TTL: %+v", r.Nodes[0].LastSeen)
		}
	}
	if age := time.Since(s.TakenAt); age < 0 {
		t.Fatal("clock went backwards")
	}
}

// TestTrackStream (real masters): while every master answers, TrackStream asks for
// the stream to be written as it is; once the only holder of x is paused, it builds
// the rows itself and returns them with x carried (from a previous poll whose rows
// were never built), exactly as Track does on whole snapshots of the same polls; once
// the master answers again, streaming resumes.
func TestTrackStream(t *testing.T) {
	servers, p := trackedMasters(t)
	var streamed, whole Tracker
	var lastStreamed time.Time // when the last poll written as a stream was taken
	poll := func() (*inspect.Snapshot, *inspect.Snapshot) {
		st := p.PollStream(context.Background())
		s := streamed.TrackStream(st)
		if s == nil {
			lastStreamed = st.Snapshot.TakenAt
		}
		return s, whole.Track(p.Poll(context.Background()))
	}
	if _, err := servers[0].Do("SET", "x", "w1#0123456789abcdef0123456789abcdef", "PX", 5000); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if s, _ := poll(); s != nil {
			t.Fatalf("every master answers: TrackStream built %d rows instead of streaming", len(s.Resources))
		}
	}
	servers[0].Pause()
	for round := range 2 {
		s, w := poll()
		if s == nil {
			t.Fatalf("round %d: m1 is down and TrackStream carried nothing", round)
		}
		r, wr := findRow(s, "x"), findRow(w, "x")
		if r == nil || wr == nil {
			t.Fatalf("round %d: x carried by TrackStream %v, by Track %v", round, r != nil, wr != nil)
		}
		ls, wls := r.Nodes[0].LastSeen, wr.Nodes[0].LastSeen
		if ls == nil || wls == nil || !ls.At.Equal(lastStreamed) || ls.ProjectedPTTLMs <= 0 {
			t.Fatalf("round %d: last seen %+v, want at %v (the streamed poll) with a projection; Track's %+v", round, ls, lastStreamed, wls)
		}
		if r.Uncertain != wr.Uncertain || r.State != wr.State || r.Holders != wr.Holders || r.Value != wr.Value || ls.Master != wls.Master || ls.Value != wls.Value || r.Nodes[0].Error == "" {
			t.Fatalf("round %d: TrackStream's row %+v, last seen %+v; Track's %+v, %+v", round, r, ls, wr, wls)
		}
	}
	servers[0].Resume()
	if s, _ := poll(); s != nil {
		t.Fatalf("m1 answers again: TrackStream built rows instead of streaming")
	}
}

// trackConfigFile writes body as a config file in a temporary directory.
func trackConfigFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
