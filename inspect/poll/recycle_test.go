package poll

import (
	"context"
	"fmt"
	"testing"
	"unsafe"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// streamRows returns every row of st, built and copied out of its chunks.
func streamRows(st *Stream) []string {
	rows := make([]string, st.Len())
	st.EachAt(func(lo int, rs []inspect.Resource) { // chunks on several goroutines: each its own rows
		for i, r := range rs {
			rows[lo+i] = fmt.Sprintf("%s %s %s %d %v", r.Resource, r.State, r.Value, r.Holders, r.Nodes)
		}
	})
	return rows
}

// TestRecycleRefillsTheTables (real masters): a poll filled into the tables of a
// recycled one has the rows a poller of its own finds, in the same memory; the
// recycled stream is empty, and a stream of a snapshot is not recycled.
func TestRecycleRefillsTheTables(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	for i := range 300 {
		do(t, servers, "SET", fmt.Sprintf("lock:%03d", i), fmt.Sprintf("w%d#%s", i, hex32), "PX", 60000)
	}
	do(t, servers[:1], "SET", "lock:split", "a#"+hex32, "PX", 60000)
	do(t, servers[1:], "SET", "lock:split", "b#"+hex32, "PX", 60000)
	cfg := testConfig(t, servers, nil)
	p := newPoller(t, cfg)
	first := p.PollStream(context.Background())
	cells := unsafe.SliceData(first.Plan.c.cells)
	chunk := unsafe.SliceData(first.Plan.c.arena.chunks[0])
	if n := len(streamRows(first)); n != 301 {
		t.Fatalf("first poll: %d rows, want 301", n)
	}
	p.Recycle(first)
	if first.Len() != 0 || first.Plan != nil {
		t.Fatalf("a recycled stream still has %d rows", first.Len())
	}
	do(t, servers[2:], "DEL", "lock:007")
	do(t, servers, "SET", "lock:001", "n#"+hex32, "PX", 60000) // a new value, no new key: the tables need not grow

	again := p.PollStream(context.Background())
	fresh := newPoller(t, cfg).PollStream(context.Background())
	if unsafe.SliceData(again.Plan.c.cells) != cells || !reusedChunk(again.Plan.c.arena.chunks, chunk) {
		t.Fatalf("the poll after Recycle did not fill the recycled tables (cells %v, chunk %v)", unsafe.SliceData(again.Plan.c.cells) == cells, reusedChunk(again.Plan.c.arena.chunks, chunk))
	}
	got, want := streamRows(again), streamRows(fresh)
	if len(got) != len(want) || len(got) != 301 {
		t.Fatalf("refilled: %d rows, a poller of its own: %d, want 301", len(got), len(want))
	}
	for i := range got {
		if stripPTTLs(got[i]) != stripPTTLs(want[i]) {
			t.Fatalf("row %d: refilled %q, a poller of its own %q", i, got[i], want[i])
		}
	}
	if again.Snapshot.Summary.Held != 301 {
		t.Fatalf("refilled summary %+v, want 301 held", again.Snapshot.Summary)
	}

	of := StreamOf(&inspect.Snapshot{Resources: []inspect.Resource{{Resource: "x"}}})
	p.Recycle(of)
	if of.Len() != 1 || p.spare != nil {
		t.Fatalf("a snapshot's stream was recycled")
	}
}

// reusedChunk reports whether chunks holds the chunk that starts at p.
func reusedChunk(chunks [][]byte, p *byte) bool {
	for _, c := range chunks {
		if unsafe.SliceData(c) == p {
			return true
		}
	}
	return false
}

// stripPTTLs drops the PTTLs and validity from a row's text: two polls read them at
// different instants.
func stripPTTLs(s string) string {
	out := []byte{}
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' && digits {
			continue
		}
		digits = c == ' '
		out = append(out, c)
	}
	return string(out)
}
