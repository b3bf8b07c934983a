package live

import (
	"context"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// A panic on Run's own goroutine (the tracker, emit) unwinds out of Run, so that the
// caller's recovery sees it: Run's nodes are stopped first, not waited for while they
// run on.
func TestRunPanicUnwinds(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	cfg := config.Default()
	if err := cfg.SetMasters([]string{s.Addr}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		_ = New(cfg).Run(ctx, func(Event) { panic("emit failed") })
	}()
	deadline := time.After(20 * time.Second)
	for i := 0; ; i++ {
		if _, err := s.Do("SET", "jobs:"+string(rune('a'+i%26)), "w:1#0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
		select {
		case rec := <-recovered:
			if rec != "emit failed" {
				t.Fatalf("Run ended with %v, want the panic of emit", rec)
			}
			return
		case <-deadline:
			t.Fatal("a panic in emit did not come out of Run within 20 s: Run waits for its nodes, which run on")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
