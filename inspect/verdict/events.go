package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
)

// Reading is what events compare of one resource between two polls.
type Reading struct {
	Value  string // the holding value, "" for a free row
	State  string
	Expiry int64 // when the value's last holder lets it go, unix ns (0: no value)
}

// ReadingOf is r's reading in a snapshot taken at now.
func ReadingOf(r *inspect.Resource, now time.Time) Reading {
	cur := Reading{Value: r.Value, State: r.State, Expiry: latestExpiry(r, now)}
	if r.State == inspect.StateFree {
		cur.Value = ""
	}
	return cur
}

// EventTolerance is how much measurement noise Change absorbs in expiries, for cfg's
// lock settings.
func EventTolerance(cfg *config.Config) time.Duration { return ParamsOf(cfg).SpreadLimit(0) }

// PollNoise is how far apart two polls' estimates of one expiry that did not move may
// be: each is a PTTL read at some instant of its poll, counted from the poll's end
// (TakenAt), so it is late by up to the poll's duration. Change's tolerance adds it.
func PollNoise(prev, cur *inspect.Snapshot) time.Duration {
	return time.Duration(max(prev.PollMs, cur.PollMs) * float64(time.Millisecond))
}

// Change returns the event that turns resource name's reading prev (the previous
// poll's; the zero Reading when it had no row) into cur (the zero Reading when the
// row is gone), seen at now; false when nothing happened. Its strings are copies:
// events outlive the poll (the console keeps them as history) and must not keep its
// memory alive.
func Change(name string, prev, cur Reading, now time.Time, tolerance time.Duration) (inspect.Event, bool) {
	e, ok := diffRow(name, prev, cur, now, tolerance)
	if ok {
		e.Resource, e.Value = strings.Clone(e.Resource), strings.Clone(e.Value)
	}
	return e, ok
}

// latestExpiry estimates when the last holder of the row's value lets it go (unix ns).
func latestExpiry(r *inspect.Resource, now time.Time) int64 {
	if r.Value == "" {
		return 0
	}
	var best int64
	for _, n := range r.Nodes {
		if n.Value == r.Value && n.PTTLMs > best {
			best = n.PTTLMs
		}
	}
	return now.Add(time.Duration(best) * time.Millisecond).UnixNano()
}

// diffRow returns the event that turns prev into cur, if any. tolerance absorbs
// measurement noise in expiries.
func diffRow(name string, prev, cur Reading, now time.Time, tolerance time.Duration) (inspect.Event, bool) {
	e := inspect.Event{At: now, Resource: name, Value: cur.Value}
	slack := int64(tolerance + time.Second)
	switch {
	case prev.Value == "" && cur.Value == "":
		return e, false
	case prev.Value == "":
		e.Kind = kindForState(cur.State, "acquired")
		e.Detail = cur.State
	case cur.Value == "":
		e.Value = prev.Value
		if prev.Expiry != 0 && now.UnixNano() >= prev.Expiry-slack {
			e.Kind, e.Detail = "expired", "its TTL ran out"
		} else {
			e.Kind = "released"
			e.Detail = fmt.Sprintf("deleted %v before its expiry", time.Duration(prev.Expiry-now.UnixNano()).Round(time.Millisecond))
		}
	case prev.Value != cur.Value:
		e.Kind = kindForState(cur.State, "owner-changed")
		e.Detail = "was " + prev.Value
	case cur.State != prev.State && (cur.State == inspect.StateSplit || cur.State == inspect.StatePartial):
		e.Kind, e.Detail = cur.State, "was "+prev.State
	case prev.Expiry != 0 && cur.Expiry-prev.Expiry > slack:
		e.Kind = "extended"
		e.Detail = fmt.Sprintf("expiry moved %v later", time.Duration(cur.Expiry-prev.Expiry).Round(time.Millisecond))
	default:
		return e, false
	}
	return e, true
}

func kindForState(state, held string) string {
	switch state {
	case inspect.StateSplit, inspect.StatePartial:
		return state
	}
	return held
}
