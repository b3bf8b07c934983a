package export

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TestWriteTextStream: the text of a real poll written from its stream (rows built a
// chunk at a time and tallied, as `dump -o prometheus` does) is WriteText's of the
// same rows built whole, byte for byte, filtered or not.
func TestWriteTextStream(t *testing.T) {
	ms, cfg := plantedMasters(t, 3, 3000)
	for i, m := range ms {
		m.Do("SET", "lock:deploy:web", fmt.Sprintf("w%d#0123456789abcdef0123456789abcdef", i), "PX", 60000) // split
		m.Do("SET", "lock:legacy", "x")                                                                     // no TTL
	}
	cfg.Inspect.Resources = []string{"job:7", "deploy:web", "never:seen"}
	st := newPoller(t, cfg).PollStream(context.Background())
	o := Options{Masters: []string{"m1", "m2", "m3"}, Resources: cfg.Inspect.Resources}
	for _, f := range []struct {
		glob     string
		only     bool
		want     string // a sample the text must have
		notInAll string // one it must not have
	}{
		{"", false, "redlockctl_lock_held{resource=\"job:7\"} 1", ""},
		{"job:1*", false, "redlockctl_locks{scope=\"redlock\",state=\"held\"} 1111", "redlockctl_lock_held{resource=\"job:7\"} 1"},
		{"", true, "redlockctl_lock_anomalies{code=\"no-ttl-node\"} 1", "redlockctl_locks{scope=\"redlock\",state=\"held\"} 3000"},
	} {
		st.Filter(f.glob, f.only)
		var streamed bytes.Buffer
		if err := WriteTextStream(&streamed, st, 42*time.Millisecond, o); err != nil {
			t.Fatal(err)
		}
		// The same rows, built whole (copied: Each reuses a chunk once it is emitted).
		var mu sync.Mutex
		var rows []inspect.Resource
		err := st.Each(func(rs []inspect.Resource, out []byte) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				r.Resource, r.Nodes, r.Anomalies = strings.Clone(r.Resource), nil, slices.Clone(r.Anomalies)
				rows = append(rows, r)
			}
			return out, nil
		}, func([]byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		whole := *st.Snapshot
		whole.Resources = rows
		var want bytes.Buffer
		if err := WriteText(&want, &whole, 42*time.Millisecond, o); err != nil {
			t.Fatal(err)
		}
		text := streamed.String()
		if text != want.String() {
			t.Errorf("filter %q, anomalies only %v: streamed text differs from the whole snapshot's\n%s\n---\n%s", f.glob, f.only, text, want.String())
		}
		if !strings.Contains(text, f.want+"\n") || f.notInAll != "" && strings.Contains(text, f.notInAll+"\n") {
			t.Errorf("filter %q, anomalies only %v: want %q and not %q in\n%s", f.glob, f.only, f.want, f.notInAll, text)
		}
	}
}

// newPoller returns a poller over cfg's masters, closed with its pools when tb ends.
func newPoller(tb testing.TB, cfg *config.Config) *poll.Poller {
	tb.Helper()
	pools, err := cfg.Pools()
	if err != nil {
		tb.Fatal(err)
	}
	p := poll.NewPoller(cfg, pools)
	tb.Cleanup(func() {
		p.Close()
		for _, pool := range pools {
			pool.Close()
		}
	})
	return p
}

// TestRunTalliesStreams: Run records polls handed to it as streams (serve's while every
// master answers): a scrape serves their tallied rows and counts every poll.
func TestRunTalliesStreams(t *testing.T) {
	ms, cfg := plantedMasters(t, 2, 500)
	ms[1].Do("SET", "lock:legacy", "x") // no TTL, on one master
	cfg.Inspect.Resources = []string{"job:42"}
	p := newPoller(t, cfg)
	e := New(Options{Masters: []string{"m1", "m2"}, Resources: cfg.Inspect.Resources})
	defer runInBackground(e, func(ctx context.Context) Poll { return Poll{Stream: p.PollStream(ctx)} }, 10*time.Millisecond)()
	deadline := time.Now().Add(10 * time.Second)
	for !e.Ready() || e.cur.Load().polls < 3 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not record 3 polls in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := samples(t, scrape(t, e))
	wantSamples(t, got, map[string]float64{
		"redlockctl_locks{scope=redlock,state=held}":     500,
		"redlockctl_locks{scope=redlock,state=no_ttl}":   1,
		"redlockctl_lock_anomalies{code=no-ttl-node}":    1,
		"redlockctl_lock_held{resource=job:42}":          1,
		"redlockctl_lock_holders{resource=job:42}":       2,
		"redlockctl_master_poll_errors_total{master=m2}": 0,
	})
	if n := got["redlockctl_polls_total{}"]; n < 3 {
		t.Errorf("polls_total %v, want at least 3", n)
	}
}

// plantedMasters starts n masters holding locks lock:job:0 .. lock:job:<locks-1> (an
// hour's TTL) and returns them with a config over them, key prefix "lock:".
func plantedMasters(t *testing.T, n, locks int) ([]*redistest.Server, *config.Config) {
	t.Helper()
	ms := redistest.StartN(t, n, redistest.Options{})
	cfg := config.Default()
	cfg.Lock.KeyPrefix = "lock:"
	for i, m := range ms {
		if err := redistest.PlantLocks(m.Pool, "lock:job:", locks, time.Hour); err != nil {
			t.Fatal(err)
		}
		cfg.Masters = append(cfg.Masters, config.MasterConfig{Name: fmt.Sprintf("m%d", i+1), Addr: m.Addr})
	}
	return ms, cfg
}
