package verdict

import (
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
)

// BenchmarkJudge measures the verdict of one row of this project's lock on 5 masters
// (one without the key): what every row of a poll costs beyond reading it.
func BenchmarkJudge(b *testing.B) {
	cfg := config.Default()
	now := time.Now()
	at := []time.Time{now, now, now, now, now}
	rates := make([]float64, 5)
	v := "w-1@h#0123456789abcdef0123456789abcdef"
	b.ReportAllocs()
	for b.Loop() {
		r := inspect.Resource{Key: "lock:x", Resource: "x", Nodes: []inspect.Node{{Master: "m1", Type: "string", Value: v, PTTLMs: 5000}, {Master: "m2", Type: "string", Value: v, PTTLMs: 5000}, {Master: "m3", Type: "string", Value: v, PTTLMs: 5000}, {Master: "m4", Type: "none", PTTLMs: -2}, {Master: "m5", Type: "string", Value: v, PTTLMs: 5000}}}
		Judge(&r, at, rates, now, cfg)
	}
}
