package lockrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlockctl/redlockctl/redlock"
)

// ErrStillThere is the Err of an Event node whose master still holds the value after
// the release (Outcome Failed): the key expires with its TTL.
var ErrStillThere = errors.New("value still there after the release: it expires with its TTL")

// readValues reads key on every master at once (GET, read-only, routed by the library
// as the lock's own commands are: a cluster's shard, a Sentinel group's master), bounded
// by the job's read timeout.
func (r *runner) readValues(key string) ([]string, redlock.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), r.job.ReadTimeout)
	defer cancel()
	return r.client.Values(ctx, key)
}

// holder names who holds the resource, from one read of the masters that refused the
// last attempt (err's *redlock.QuorumError says which; all masters when there is none,
// or the wait ended in the middle of an attempt): the value most of them hold, and its
// owner when the value is one this library writes. Masters that took the attempt do
// not count: they may still hold its value until its release lands.
func (r *runner) holder(err error) *HeldError {
	e := &HeldError{Resource: r.job.Resource, Masters: r.client.Masters(), Waited: r.job.Wait}
	var ask []bool
	var qe *redlock.QuorumError
	cut := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) // the wait ended mid-attempt
	if errors.As(err, &qe) && len(qe.Result.Nodes) > 0 && !cut {
		ask = make([]bool, r.client.Masters())
		for _, n := range qe.Result.Nodes {
			if n.Master >= 0 && n.Master < len(ask) {
				ask[n.Master] = n.Outcome == redlock.Taken
			}
			if n.Outcome == redlock.OK && n.Err != nil {
				e.NotCounted = append(e.NotCounted, fmt.Sprintf("master %d %v", n.Master+1, n.Err))
			}
		}
		e.Answered = qe.Result.Reachable()
		e.Attempt = qe
	}
	count := map[string]int{}
	values, res := r.readValues(r.client.Key(r.job.Resource))
	for i, v := range values {
		if ask != nil && !ask[i] {
			continue
		}
		if o := res.Nodes[i].Outcome; o != redlock.OK && o != redlock.Absent {
			continue
		}
		if ask == nil {
			e.Answered++
		}
		if v != "" {
			count[v]++
		}
	}
	for v, n := range count {
		if n > e.Holders || n == e.Holders && v < e.Value {
			e.Value, e.Holders = v, n
		}
	}
	if owner, _, ok := redlock.ParseValue(e.Value); ok {
		e.Owner = owner
	}
	return e
}

// look reads where l's value is, for an Event's Nodes. After the acquisition
// (released false): OK where the value is there, Taken where another is, Absent where
// none is. After the release: OK where the value is gone, Taken where another value is
// there, Failed with ErrStillThere where it is still there. Acquire and Release return
// as soon as a quorum confirmed; the other masters may still be running the command, so
// those not yet where they should be are read again until the read timeout has passed.
func (r *runner) look(l *redlock.Lock, released bool) []redlock.NodeResult {
	until := time.Now().Add(r.job.ReadTimeout)
	nodes := make([]redlock.NodeResult, r.client.Masters())
	ask := make([]bool, len(nodes))
	for i := range ask {
		ask[i] = true
	}
	for {
		again := false
		values, res := r.readValues(l.Key())
		for i, v := range values {
			if !ask[i] {
				continue
			}
			n := redlock.NodeResult{Master: i, Outcome: redlock.OK}
			switch got := res.Nodes[i]; {
			case got.Outcome != redlock.OK && got.Outcome != redlock.Absent:
				n = got // Timeout, Failed or Refused
			case v == l.Value() && released:
				n.Outcome, n.Err = redlock.Failed, ErrStillThere
			case v == "" && !released:
				n.Outcome = redlock.Absent
			case v != "" && v != l.Value():
				n.Outcome = redlock.Taken
			}
			nodes[i] = n
			ask[i] = n.Err == ErrStillThere || n.Outcome == redlock.Absent
			again = again || ask[i]
		}
		if !again || time.Now().After(until) {
			return nodes
		}
		time.Sleep(10 * time.Millisecond)
	}
}
