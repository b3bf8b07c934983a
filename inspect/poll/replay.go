package poll

import (
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/internal/config"
)

// Recorded is what one poll read from one master, given rather than read: Replay builds
// a snapshot from it without any server, for fixtures (package inspecttest) and
// captures.
type Recorded struct {
	Err    error               // the master failed during the poll: only Keys (sent before) are used
	Clock  verdict.ClockSample // its TIME sample
	Health RecordedHealth
	ReadAt time.Time // when its keys were read
	Keys   []RecordedKey
}

// RecordedHealth is a master's INFO and CONFIG as a poll reads them.
type RecordedHealth struct {
	Role, RunID, ReplID       string
	UptimeS                   int64
	AppendOnly, Fsync, Policy string
	Maxmemory                 int64
	Server, Version           string
}

// RecordedKey is one key as read: its value (strings), its type when it is not a
// string, and its PTTL in milliseconds (-1 no expiry).
type RecordedKey struct {
	Key, Value, Type string
	PTTLMs           int64
}

// Replay builds the snapshot that a poll at now would have built from masters (one per
// cfg.Masters entry, same order), through the same merge, judge and findings code as a
// live poll. It sends nothing.
func Replay(cfg *config.Config, now time.Time, masters []Recorded) *inspect.Snapshot {
	col := newCollector(cfg)
	reads := make([]*masterRead, len(masters))
	for i, m := range masters {
		kb := &keyBatch{}
		for _, k := range m.Keys {
			kb.keys = append(kb.keys, []byte(k.Key))
			kb.vals = append(kb.vals, []byte(k.Value))
			kb.types = append(kb.types, k.Type)
			kb.pttls = append(kb.pttls, k.PTTLMs)
		}
		col.add(i, m.ReadAt, kb)
		if m.Err != nil {
			reads[i] = &masterRead{err: m.Err}
			continue
		}
		clock := m.Clock
		h := m.Health
		reads[i] = &masterRead{clock: &clock, health: &verdict.Health{Role: h.Role, UptimeS: h.UptimeS, RunID: h.RunID,
			ReplID: h.ReplID, AppendOnly: h.AppendOnly, Fsync: h.Fsync, Maxmemory: h.Maxmemory, Policy: h.Policy,
			Server: h.Server, Version: h.Version, SecondReplOffset: -1, MinReplicas: -1}}
	}
	return NewPoller(cfg, nil).build(now, reads, col)
}
