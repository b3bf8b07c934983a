// Package live turns what N Redis masters say about their keys, as it happens, into lock
// lifecycle events: acquired, extended, released, expired, evicted, contended, plus gap
// and resync for what the feed could not see. One lifecycle is one acquired event and
// one end event, however many masters hold the lock.
//
// The signal is CLIENT TRACKING in BCAST mode (one invalidation per change of a
// matching key, redirected to a SUBSCRIBE connection): it says which key changed, not
// how. The Tracker infers the how from the sequence of changes on each master and from
// timing, and reads back (GET, PTTL) only what inference cannot settle: a lock still
// held after ReadDelay (its value, owner and TTL), a change of a lock whose TTL is known
// (released or extended?), a quiet key whose last changes may have been merged into
// one invalidation, and every key after a gap. It schedules a read at each known
// deadline, which makes the server expire the key on time.
//
// Where an operator has already enabled keyspace notifications on a master, the feed
// hears them too (see keyspace.go): they name each change (set, del, expired,
// evicted, expire), one per command, and are taken as named; the invalidations then
// only bring the changes they do not name.
//
// Like the rest of inspect/, the package never sends a write command: CLIENT ID, CLIENT
// TRACKING, CONFIG GET, SUBSCRIBE, PSUBSCRIBE, PING, SCAN, and the key reader's TYPE,
// PTTL, GET, HSCAN, ZRANGE and LRANGE (poll.ReadKeys) only. It never turns keyspace
// notifications on.
package live

import (
	"encoding/json"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
)

// Event kinds, in Event.Event.
const (
	Acquired      = "acquired"       // a value reached a quorum of masters
	Extended      = "extended"       // its TTL was renewed on a quorum
	Released      = "released"       // deleted by its holder before it expired
	Expired       = "expired"        // reached its TTL on a quorum, never released
	Evicted       = "evicted"        // removed by maxmemory eviction (keyspace events only)
	Contended     = "contended"      // reached some masters, never a quorum, and was removed
	ForceReleased = "force-released" // released by an operator through redlockctl
	Gap           = "gap"            // a master's feed was cut: what happened there from..to is unseen
	Resync        = "resync"         // a master's keys were read whole again after a gap
	Degraded      = "degraded"       // a master cannot feed (e.g. ACL): polled instead
	Stalled       = "stalled"        // the feed itself waited for a core from..to: what came then was handled late
)

// Event sources, in Event.Source.
const (
	SourceTracking = "tracking" // CLIENT TRACKING invalidations, and the reads they led to
	SourceKeyspace = "keyspace" // keyspace notifications an operator enabled
	SourcePoll     = "poll"     // a read of the master's keys (after a gap, or degraded)
)

// Event is one lifecycle event (or a gap in what could be seen). Its JSON form, one
// object per line, is the stable `events -o ndjson` contract.
type Event struct {
	At       time.Time `json:"-"`
	Event    string    `json:"event"`
	Resource string    `json:"resource,omitempty"`
	Key      string    `json:"key,omitempty"`
	Value    string    `json:"value,omitempty"`
	Owner    string    `json:"owner,omitempty"`
	Library  string    `json:"library,omitempty"`
	Masters  int       `json:"masters,omitempty"`
	Quorum   int       `json:"quorum,omitempty"`
	TTLMs    int64     `json:"ttl_ms,omitempty"`
	HeldMs   *float64  `json:"held_ms,omitempty"`
	MarginMs *float64  `json:"margin_ms,omitempty"`
	Source   string    `json:"source,omitempty"`
	Master   string    `json:"master,omitempty"`
	From     time.Time `json:"-"`
	To       time.Time `json:"-"`
	Reason   string    `json:"reason,omitempty"`
}

// TimeFormat is how event times are written: RFC 3339 in UTC, to the microsecond.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// MarshalJSON writes the event with its times in TimeFormat.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	out := struct {
		At   string `json:"at"`
		From string `json:"from,omitempty"`
		To   string `json:"to,omitempty"`
		plain
	}{At: e.At.UTC().Format(TimeFormat), plain: plain(e)}
	if !e.From.IsZero() {
		out.From = e.From.UTC().Format(TimeFormat)
	}
	if !e.To.IsZero() {
		out.To = e.To.UTC().Format(TimeFormat)
	}
	return json.Marshal(out)
}

// Match reports whether q keeps e: a lifecycle event by its resource, owner, value,
// library and kind (as `state:`); gaps, resyncs and degraded masters name no resource
// and are always kept.
func (e Event) Match(q inspect.Query) bool {
	return e.Resource == "" || q.Empty() ||
		q.Match(inspect.QueryFields{Resource: e.Resource, Owner: e.Owner, Value: e.Value, Library: e.Library, State: e.Event})
}

// Ends reports whether the event ends a lifecycle.
func (e Event) Ends() bool {
	switch e.Event {
	case Released, Expired, Evicted, ForceReleased:
		return true
	}
	return false
}

func millis(d time.Duration) *float64 {
	v := float64(d.Microseconds()) / 1000
	return &v
}
