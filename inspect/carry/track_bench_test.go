package carry

import (
	"fmt"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

// trackRows builds a snapshot of n held rows on 5 masters; master down is unreachable
// (-1: none).
func trackRows(n, down int, at time.Time) *inspect.Snapshot {
	s := &inspect.Snapshot{TakenAt: at}
	for i := range 5 {
		s.Masters = append(s.Masters, inspect.Master{Name: fmt.Sprintf("m%d", i+1), Up: i != down})
	}
	s.Resources = make([]inspect.Resource, n)
	for r := range s.Resources {
		nodes := make([]inspect.Node, 5)
		for i := range nodes {
			nodes[i] = inspect.Node{Master: s.Masters[i].Name, Value: "v", PTTLMs: 60000, Type: inspect.TypeString}
			if i == down {
				nodes[i] = inspect.Node{Master: s.Masters[i].Name, PTTLMs: -2, Type: inspect.TypeNone, Error: "no answer"}
			}
		}
		s.Resources[r] = inspect.Resource{Resource: fmt.Sprintf("r%07d", r), State: inspect.StateHeld, Value: "v", Holders: 5, Nodes: nodes}
	}
	return s
}

// BenchmarkTrack: what a Tracker adds to a poll of 100k rows: while every master
// answers (the usual case), and while one master holding all of them is down.
func BenchmarkTrack(b *testing.B) {
	t0 := time.Now()
	for _, c := range []struct {
		name string
		down int
	}{{"all-up", -1}, {"one-down", 4}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				var tr Tracker
				tr.Track(trackRows(100_000, -1, t0))
				s := trackRows(100_000, c.down, t0.Add(time.Second))
				start := time.Now()
				tr.Track(s)
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms/track-100k")
				if c.down >= 0 && s.Resources[0].Nodes[c.down].LastSeen == nil {
					b.Fatal("nothing carried")
				}
			}
		})
	}
}
