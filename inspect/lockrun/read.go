package lockrun

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
)

// ErrStillThere is the Err of an Event node whose master still holds the value after
// the release (Outcome Failed): the key expires with its TTL.
var ErrStillThere = errors.New("value still there after the release: it expires with its TTL")

// errNotAsked marks a master readValues was told not to read.
var errNotAsked = errors.New("not asked")

// read is one master's answer to GET key.
type read struct {
	value string // "" absent
	err   error
}

// readValues sends GET key to every master at once (read-only), each bounded by the
// job's read timeout; only to those with ask[i] when ask is not nil.
func (r *runner) readValues(key string, ask []bool) []read {
	out := make([]read, len(r.pools))
	var wg sync.WaitGroup
	for i, p := range r.pools {
		if ask != nil && !ask[i] {
			out[i].err = errNotAsked
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), r.job.ReadTimeout)
			defer cancel()
			conn, err := p.GetContext(ctx)
			if err != nil {
				out[i].err = err
				return
			}
			defer conn.Close()
			v, err := redis.String(redis.DoContext(conn, ctx, "GET", key))
			if err != nil && !errors.Is(err, redis.ErrNil) {
				out[i].err = err
			}
			out[i].value = v
		}()
	}
	wg.Wait()
	return out
}

// holder names who holds the resource, from one read of the masters that refused the
// last attempt (err's *redlock.QuorumError says which; all masters when there is none,
// or the wait ended in the middle of an attempt): the value most of them hold, and its
// owner when the value is one this library writes. Masters that took the attempt are
// not read: they may still hold its value until its release lands.
func (r *runner) holder(err error) *HeldError {
	e := &HeldError{Resource: r.job.Resource, Masters: len(r.pools), Waited: r.job.Wait}
	var ask []bool
	var qe *redlock.QuorumError
	cut := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) // the wait ended mid-attempt
	if errors.As(err, &qe) && len(qe.Result.Nodes) > 0 && !cut {
		ask = make([]bool, len(r.pools))
		for _, n := range qe.Result.Nodes {
			if n.Master >= 0 && n.Master < len(ask) {
				ask[n.Master] = n.Outcome == redlock.Taken
			}
		}
		e.Answered = qe.Result.Reachable()
	}
	count := map[string]int{}
	for _, rd := range r.readValues(r.client.Key(r.job.Resource), ask) {
		if rd.err != nil {
			continue
		}
		if ask == nil {
			e.Answered++
		}
		if rd.value != "" {
			count[rd.value]++
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
	nodes := make([]redlock.NodeResult, len(r.pools))
	ask := make([]bool, len(r.pools))
	for i := range ask {
		ask[i] = true
	}
	for {
		again := false
		for i, rd := range r.readValues(l.Key(), ask) {
			if !ask[i] {
				continue
			}
			n := redlock.NodeResult{Master: i, Outcome: redlock.OK}
			var re redis.Error
			switch {
			case errors.Is(rd.err, context.DeadlineExceeded) || isTimeout(rd.err):
				n.Outcome, n.Err = redlock.Timeout, rd.err
			case errors.As(rd.err, &re):
				n.Outcome, n.Err = redlock.Refused, rd.err
			case rd.err != nil:
				n.Outcome, n.Err = redlock.Failed, rd.err
			case rd.value == l.Value() && released:
				n.Outcome, n.Err = redlock.Failed, ErrStillThere
			case rd.value == "" && !released:
				n.Outcome = redlock.Absent
			case rd.value != "" && rd.value != l.Value():
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

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
