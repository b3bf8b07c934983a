package ui

import (
	"github.com/redlockctl/redlockctl/inspect"
)

// topologySnapshot is testSnapshot with m2 a Sentinel group (read at its resolved
// master) and m3 a 3-shard cluster whose third shard has a finding.
func topologySnapshot() *inspect.Snapshot {
	s := testSnapshot()
	m2 := &s.Masters[1]
	m2.Via, m2.SentinelMasterName, m2.Addr = "sentinel", "locks-2", "10.0.1.7:6379"
	m2.Server, m2.Version = "valkey", "8.0.1"
	m2.Findings = []inspect.Finding{{Code: "failed-over-recently", Severity: "crit", Master: "m2", Message: "promoted 12s ago"}}
	m3 := &s.Masters[2]
	m3.Via, m3.Addr = "cluster", "10.0.2.1:6379,10.0.2.2:6379"
	for i, slots := range []string{"0-5460", "5461-10922", "10923-16383"} {
		sh := inspect.Master{Name: "m3 shard", Addr: "10.0.2." + string(rune('1'+i)) + ":6379", Up: true, RTTMs: 0.5,
			ClockOffsetMs: float64(i), ClockRatePPM: ptr(float64(i * 10)), Role: "master", Slots: slots}
		if i == 2 {
			sh.ClockOffsetMs, sh.ClockRatePPM = 1500, ptr(20000.0)
			sh.Findings = []inspect.Finding{{Code: "clock-rate", Severity: "crit", Master: "m3", Message: "fast"}}
		}
		m3.Shards = append(m3.Shards, sh)
	}
	m3.Findings = []inspect.Finding{{Code: "clock-rate", Severity: "crit", Master: "m3", Message: "shard 3 fast"}}
	return s
}
