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

// A whole read sends at most syncPages pages ahead of the driver: the next waits until
// the driver has handled one, and a page that could not be sent frees its place.
func TestSyncPagesWaitForTheDriver(t *testing.T) {
	out := make(chan signal, 4*syncPages)
	n := &node{out: out, pages: make(chan struct{}, syncPages)}
	ctx := context.Background()
	for i := range syncPages {
		if !n.sendPage(ctx, signal{kind: sigSyncPage}) {
			t.Fatalf("page %d of %d was not sent", i+1, syncPages)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if n.sendPage(short, signal{kind: sigSyncPage}) || len(out) != syncPages {
		t.Fatalf("a page past %d waiting was sent: %d in the channel", syncPages, len(out))
	}
	if len(n.pages) != syncPages {
		t.Fatalf("%d places taken after a page that was not sent, want %d", len(n.pages), syncPages)
	}
	<-out
	n.pageDone() // the driver handled one
	if !n.sendPage(ctx, signal{kind: sigSyncPage}) || len(out) != syncPages {
		t.Fatalf("a page after the driver handled one was not sent")
	}
}
