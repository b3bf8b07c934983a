package cli

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/export"
	"github.com/redlockctl/redlockctl/inspect/export/exporttest"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// serve's poll (trackedPoll, with its tables recycled before each poll) against real
// masters: solo is held on m1 alone, all on every master. Once m1 stops answering,
// the metrics still count solo (a partial row, as last seen on m1) poll after poll,
// until its projected PTTL has passed; all stays held from the masters that answer.
func TestServeCarriesRowsOfAMasterThatStops(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{})
	hex := "#0123456789abcdef0123456789abcdef"
	for _, m := range ms {
		plant(t, m, "SET", "all", "a"+hex, "PX", 60000)
	}
	plant(t, ms[0], "SET", "solo", "s"+hex, "PX", 8000)
	body := "[inspect]\ntimeout = \"300ms\"\npoll_interval = \"100ms\"\n"
	for i, m := range ms {
		body += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
	}
	cfg, _, err := config.Load(writeConfig(t, body))
	if err != nil {
		t.Fatal(err)
	}
	pools, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	defer closePools(pools)
	p := poll.NewPoller(cfg, pools)
	defer p.Close()
	e := export.New(exportOptions(cfg))
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx, trackedPoll(p, io.Discard), cfg.Inspect.PollInterval) }()
	defer func() { cancel(); <-done }()

	partial := `redlockctl_locks{scope="redlock",state="partial"}`
	held := `redlockctl_locks{scope="redlock",state="held"}`
	m1 := `redlockctl_master_up{master="m1"}`
	// await scrapes until the polls counted go past after and ok says yes.
	await := func(what string, after float64, ok func(m map[string]float64) bool) map[string]float64 {
		t.Helper()
		var m map[string]float64
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if m = exporttest.Scrape(t, srv.URL+"/metrics"); m["redlockctl_polls_total"] > after && ok(m) {
				return m
			}
		}
		t.Fatalf("%s: never; last scrape: %s %v, %s %v, %s %v, polls %v", what, partial, m[partial], held, m[held], m1, m[m1], m["redlockctl_polls_total"])
		return nil
	}
	m := await("solo partial and all held, every master up", 1, func(m map[string]float64) bool {
		return m[partial] == 1 && m[held] == 1 && m[m1] == 1
	})
	ms[0].Pause()
	defer ms[0].Resume()
	m = await("m1 reported down", m["redlockctl_polls_total"], func(m map[string]float64) bool { return m[m1] == 0 })
	// Three polls more with m1 down: solo is still counted in each.
	for range 3 {
		polls := m["redlockctl_polls_total"]
		m = await("another poll", polls, func(map[string]float64) bool { return true })
		if m[m1] != 0 {
			t.Fatalf("m1 answers while paused: %v", m)
		}
		if m[partial] != 1 || m[held] != 1 {
			t.Fatalf("poll %v with m1 down: %s %v (want 1: solo, carried), %s %v (want 1: all)", m["redlockctl_polls_total"], partial, m[partial], held, m[held])
		}
	}
	// solo's projection passes 8 s after it was read: it is no longer counted.
	await("solo gone once its projected PTTL passed", m["redlockctl_polls_total"], func(m map[string]float64) bool {
		return m[m1] == 0 && m[partial] == 0 && m[held] == 1
	})
}
