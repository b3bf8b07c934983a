// Package history keeps what the live feed reports: one record per lock lifecycle
// (who held which resource, from when to when, and how it ended), plus the feed's
// gaps and resyncs, force-releases with their audit lines, masters going down and
// coming back, and doctor findings as they appear and clear. A Recorder turns the
// stream of live.Event into records and writes them to a Store once a second; the
// Store answers who held a resource at an instant, what expired, what was held longer
// than a duration.
//
// An answer is never a guess: an instant inside a feed gap, or while nothing was
// recording, is answered as unknown with the span that makes it so, and a lifecycle
// whose end a gap hid ends `unknown`.
//
// The store (a Backend) is an embedded bbolt file by default (see docs/history.md
// for why), bounded by size and age with the oldest data dropped first, or a
// PostgreSQL database that several recorders share (PG), partitioned by day. It is
// read-side: nothing here talks to Redis.
package history

import (
	"encoding/json"
	"time"
)

// Lifecycle ends, in Lifecycle.End.
const (
	Released      = "released"       // deleted by its holder
	Expired       = "expired"        // reached its TTL while held
	ForceReleased = "force-released" // released by an operator through redlockctl
	Evicted       = "evicted"        // removed by maxmemory eviction
	Unknown       = "unknown"        // ended unseen: a feed gap (or a stop of the recorder) covered its end
	Held          = ""               // not ended when last recorded
)

// Lifecycle is one lock lifecycle: one acquisition of a resource by one value, up to
// its end.
type Lifecycle struct {
	Resource string `json:"resource"`
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	Owner    string `json:"owner,omitempty"`
	Library  string `json:"library,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Masters  int    `json:"masters"` // how many masters held it
	Quorum   int    `json:"quorum"`
	// AcquiredAt is when a quorum first held it; with Unseen, when the feed first
	// knew it held (it was acquired before the recorder started, or in a feed gap).
	AcquiredAt time.Time `json:"acquired_at"`
	Unseen     bool      `json:"acquired_unseen,omitempty"`
	// EndedAt is when it ended (zero while Held); for End Unknown, the latest it
	// can have ended (the gap's resync, or the recorder's restart).
	EndedAt    time.Time `json:"ended_at,omitzero"`
	End        string    `json:"end"`
	TTLMs      int64     `json:"ttl_ms,omitempty"`
	MarginMs   *float64  `json:"margin_ms,omitempty"` // a release's validity left
	Extensions int       `json:"extensions"`
	// Audit is the audit log's intent line of the force-release that ended it.
	Audit json.RawMessage `json:"audit,omitempty"`
}

// HoldMs is how long it was held, in milliseconds; nil where that is not known (an
// acquisition unseen, an end unknown, or still held).
func (l Lifecycle) HoldMs() *float64 {
	if l.Unseen || l.End == Unknown || l.End == Held || l.AcquiredAt.IsZero() {
		return nil
	}
	v := float64(l.EndedAt.Sub(l.AcquiredAt).Microseconds()) / 1000
	return &v
}

// MarshalJSON writes the lifecycle with its hold time, times in RFC 3339 (UTC, µs).
func (l Lifecycle) MarshalJSON() ([]byte, error) {
	type plain Lifecycle
	out := struct {
		AcquiredAt string   `json:"acquired_at"`
		EndedAt    string   `json:"ended_at,omitempty"`
		HoldMs     *float64 `json:"hold_ms,omitempty"`
		plain
	}{AcquiredAt: l.AcquiredAt.UTC().Format(TimeFormat), HoldMs: l.HoldMs(), plain: plain(l)}
	if !l.EndedAt.IsZero() {
		out.EndedAt = l.EndedAt.UTC().Format(TimeFormat)
	}
	return json.Marshal(out)
}

// Mark kinds, in Mark.Kind.
const (
	MarkGap            = "gap"             // a master's feed was cut from At to To (zero: still cut)
	MarkResync         = "resync"          // a master's keys were read whole again
	MarkDegraded       = "degraded"        // a master is polled instead of fed
	MarkSession        = "session"         // the recorder ran from At to To (its last write)
	MarkMasterDown     = "master-down"     // a master stopped answering
	MarkMasterUp       = "master-up"       // it answers again
	MarkFinding        = "finding"         // a doctor finding appeared
	MarkFindingCleared = "finding-cleared" // it is gone
	MarkForceRelease   = "force-release"   // an operator's force-release (Text: its audit line)
)

// Mark is an event that is not a lifecycle: what the feed could not see, what the
// recorder did, and what the masters and the doctor said.
type Mark struct {
	Kind     string    `json:"kind"`
	At       time.Time `json:"at"`
	To       time.Time `json:"to,omitzero"`
	Master   string    `json:"master,omitempty"`
	Resource string    `json:"resource,omitempty"`
	Code     string    `json:"code,omitempty"` // a finding's code
	Text     string    `json:"text,omitempty"` // why (a gap's reason, an error, a finding's message, an audit line)
}

// TimeFormat is how record times are written: RFC 3339 in UTC, to the microsecond.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"
