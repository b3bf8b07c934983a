package redlock

import (
	"errors"
	"sync"
)

// retryGate tells whether the operation a call belongs to is still waiting for replies.
// Its mutex orders a NOSCRIPT retry against the caller's next commands.
type retryGate struct {
	mu     sync.Mutex
	closed bool
}

// close marks the operation over; a retry being queued finishes first.
func (g *retryGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// errNoScriptLate is the outcome of a script call that met NOSCRIPT after its operation
// ended: it was not executed and is not retried.
var errNoScriptLate = errors.New("NOSCRIPT (scripts flushed) after the operation ended: not retried, nothing executed")

// resubmitAsEval re-queues a script call as EVAL after NOSCRIPT (the EVAL also loads the
// script, so later EVALSHAs succeed). The reader never blocks: a full queue fails the call.
//
// Scripts are loaded on every new connection, so NOSCRIPT only follows a SCRIPT FLUSH
// (or a script cache reset) on a live connection. The retry goes to the back of the
// pipe's queue, behind commands already sent, so it runs out of order with them. That
// is harmless while the call's operation is still waiting for it: the caller has issued
// nothing since, and commands of other callers are concurrent with it, so any order is
// one they could have had. Once the operation is over (gather returned: quorum, node
// timeout or ctx), its caller may already have sent the next commands on that key (the
// release after a failed fenced acquisition, a shorter Extend after a longer one, a
// Delete), and a late retry would run after them: a fenced write landing after its own
// release, a stale PEXPIRE cutting a newer TTL short. So a retry is queued only while
// the gate is open, under its mutex: if gather closes it first, the call is dropped
// (never executed, like a master that did not answer); if the retry is queued first, it
// is ahead of anything the caller sends after gather returns, on this same pipe.
//
// The release script is the exception: it has no gate and is always retried, because
// running it late is harmless and dropping it would leave the value until its TTL. It
// deletes only its own value, which is unique to one acquisition and written only by
// that acquisition's SET (or fenced script), queued before it on the same pipe; and a
// released value is not renewed afterwards (Release marks the Lock lost before sending,
// and the value a failed acquisition releases belongs to no Lock). So the late delete
// finds either that value, which was to go, or nothing of its own.
func (p *pipe) resubmitAsEval(c *call) {
	if c.gate != nil {
		c.gate.mu.Lock()
		defer c.gate.mu.Unlock()
		if c.gate.closed {
			c.deliver(reply{outcome: Refused, err: errNoScriptLate})
			return
		}
	}
	args := make([]any, len(c.args))
	copy(args, c.args)
	args[0] = c.script.src
	c.cmd, c.args = "EVAL", args
	p.submit(c)
}
