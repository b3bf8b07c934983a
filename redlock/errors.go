package redlock

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotAcquired is returned by Acquire when no attempt won a quorum within validity,
// wrapped in a *QuorumError that describes the last attempt per master.
var ErrNotAcquired = errors.New("redlock: lock not acquired")

// ErrLockLost is returned by Extend (and seen by Do's callback through its context)
// when the lock can no longer be proven held: it expired locally, or fewer than a
// quorum of masters still had its value.
var ErrLockLost = errors.New("redlock: lock lost")

// ErrNotReleased is returned by Release when fewer than a quorum of masters confirmed
// that the lock's value is gone; the keys left behind expire with their TTL.
var ErrNotReleased = errors.New("redlock: release not confirmed by a quorum")

// ErrNoQuorum is returned by the admin calls (ExtendValue, ReleaseValue, Delete) when
// fewer than a quorum of masters answered at all, so the state of the resource is unknown.
var ErrNoQuorum = errors.New("redlock: fewer than a quorum of masters answered")

// ErrExtensionLimit is returned by Extend once a lock has been extended as many times as
// WithMaxExtensions allows; nothing is sent and the lock keeps its current deadline.
var ErrExtensionLimit = errors.New("redlock: extension limit reached")

// ErrInvalidResource is returned (wrapped, with the operation, resource and reason) by
// every call that takes a resource name when the name is empty or its key would end in
// FenceSuffix, the names reserved for fence counters; nothing is sent then.
var ErrInvalidResource = errors.New("redlock: invalid resource name")

// ErrClosed is returned by every call made after Close.
var ErrClosed = errors.New("redlock: client closed")

// Errors carried by NodeResult.Err for outcomes that are not Redis replies.
var (
	errNodeTimeout = errors.New("no reply within the node timeout")
	errQueueFull   = errors.New("command queue full (master not keeping up)")
)

// Outcome is what one master did with one command.
type Outcome int

// Per-master outcomes.
const (
	OK      Outcome = iota // the master did what was asked
	Taken                  // the key holds another value (or a fence counter refused the token)
	Absent                 // the key (or the expected value) is not there
	Timeout                // no reply within the node timeout
	Refused                // the master answered with an error (NOPERM, WRONGTYPE, READONLY, ...)
	Failed                 // the connection failed (refused, reset, closed)
)

var outcomeNames = [...]string{"ok", "taken", "absent", "timeout", "refused", "error"}

// String returns the lower-case name of the outcome ("ok", "taken", ...).
func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return fmt.Sprintf("outcome(%d)", int(o))
	}
	return outcomeNames[o]
}

// NodeResult is one master's outcome for one operation.
type NodeResult struct {
	Master  int     // index into the pools given to New
	Outcome Outcome // what happened
	Err     error   // the Redis or network error for Refused, Timeout and Failed
}

// Result is the per-master outcome of an operation, in master order.
type Result struct {
	Nodes []NodeResult
}

// Reachable returns how many masters answered (any outcome but Timeout and Failed).
func (r Result) Reachable() int {
	return len(r.Nodes) - r.Count(Timeout) - r.Count(Failed)
}

// Count returns how many masters had outcome o.
func (r Result) Count(o Outcome) int {
	n := 0
	for _, nr := range r.Nodes {
		if nr.Outcome == o {
			n++
		}
	}
	return n
}

// QuorumError reports an operation that did not reach a quorum of masters, with what
// each master did. errors.Is with ErrNotAcquired, ErrLockLost, ErrNotReleased or
// ErrNoQuorum tells which failure; context errors stay visible to errors.Is as well.
type QuorumError struct {
	Op       string // "acquire", "extend", "release", "extend-value", "release-value", "delete"
	Resource string
	Quorum   int
	Result   Result
	Err      error // ErrNotAcquired, ErrLockLost, ErrNotReleased or ErrNoQuorum, possibly joined with a context error
}

// Error summarises the per-master outcomes, e.g.
// "redlock: acquire "jobs": 2/5 ok, quorum 3 (master 0 ok, master 1 taken, master 2
// timeout: ..., ...): redlock: lock not acquired".
func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: %s %q: %d/%d ok, quorum %d (", e.Op, e.Resource, e.Result.Count(OK), len(e.Result.Nodes), e.Quorum)
	for i, nr := range e.Result.Nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "master %d %s", nr.Master, nr.Outcome)
		if nr.Err != nil {
			fmt.Fprintf(&b, ": %v", nr.Err)
		}
	}
	b.WriteString(")")
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the sentinel or context error behind the failure.
func (e *QuorumError) Unwrap() error { return e.Err }
