package redlock

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// op is one command sent to every master at once, and the replies coming back.
type op struct {
	c       *Client
	replies chan reply
	res     Result // pre-filled with Timeout; replies overwrite their master's entry
	got     int
	want    int        // replies gather waits for: the masters the command went to
	gate    *retryGate // closed when gather returns: no NOSCRIPT retry after that
}

// broadcast queues the same command (args shared, read-only) on every master's pipe for
// key. It never blocks and starts no goroutine.
func (c *Client) broadcast(key string, s *script, cmd string, args []any) *op {
	return c.sendTo(nil, key, s, cmd, args)
}

// sendTo is broadcast to the masters only lists (every master when nil); the others
// are sent nothing, and gather waits for the listed ones only.
func (c *Client) sendTo(only []int, key string, s *script, cmd string, args []any) *op {
	n := len(c.masters)
	o := &op{c: c, replies: make(chan reply, n), res: Result{Nodes: make([]NodeResult, n)}, gate: &retryGate{}, want: n}
	if only != nil {
		o.want = 0
	}
	calls := make([]call, n)
	for i, m := range c.masters {
		o.res.Nodes[i] = NodeResult{Master: i, Outcome: Timeout, Err: errNodeTimeout}
		if only != nil {
			if !slices.Contains(only, i) {
				continue
			}
			o.want++
		}
		calls[i] = call{cmd: cmd, args: args, script: s, master: i, done: o.replies}
		if s != releaseScript { // a release is retried even after its operation (see resubmitAsEval)
			calls[i].gate = o.gate
		}
		if c.closed.Load() {
			calls[i].fail(Failed, ErrClosed)
			continue
		}
		m.submit(key, &calls[i])
	}
	return o
}

// broadcastScript runs s (EVALSHA, EVAL on NOSCRIPT) on every master.
func (c *Client) broadcastScript(key string, s *script, keys []string, argv ...any) *op {
	args := make([]any, 0, 2+len(keys)+len(argv))
	args = append(args, s.sha, len(keys))
	for _, k := range keys {
		args = append(args, k)
	}
	args = append(args, argv...)
	return c.broadcast(key, s, "EVALSHA", args)
}

// gather collects replies until every master answered, stop says enough, the node
// timeout passes (unanswered masters stay Timeout), or ctx is done (its error is
// returned). classify turns a reply into the master's NodeResult; stop sees the result
// so far. When it returns, the operation is over: a script call still unanswered will
// not be retried as EVAL after NOSCRIPT (see resubmitAsEval).
func (o *op) gather(ctx context.Context, classify func(reply) NodeResult, stop func(*op) bool) error {
	defer o.gate.close()
	n := o.want
	if stop != nil && stop(o) {
		return nil
	}
	timer := time.NewTimer(o.c.opts.nodeTimeout)
	defer timer.Stop()
	for o.got < n {
		select {
		case r := <-o.replies:
			o.got++
			o.res.Nodes[r.master] = classify(r)
			if stop != nil && stop(o) {
				return nil
			}
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// transport classifies the replies that carry no Redis value (refused, timeout, failed).
func transport(r reply) (NodeResult, bool) {
	if r.outcome != OK {
		return NodeResult{Master: r.master, Outcome: r.outcome, Err: r.err}, true
	}
	return NodeResult{Master: r.master, Outcome: OK}, false
}

// ownerChecked classifies the replies of releaseScript and extendScript.
func ownerChecked(r reply) NodeResult {
	if nr, done := transport(r); done {
		return nr
	}
	v, ok := r.v.(int64)
	if !ok {
		return NodeResult{Master: r.master, Outcome: Failed, Err: unexpected(r.v)}
	}
	switch v {
	case replyDone:
		return NodeResult{Master: r.master, Outcome: OK}
	case replyAbsent:
		return NodeResult{Master: r.master, Outcome: Absent}
	case replyTaken:
		return NodeResult{Master: r.master, Outcome: Taken}
	}
	return NodeResult{Master: r.master, Outcome: Failed, Err: unexpected(r.v)}
}

// count returns how many masters have outcome out so far.
func (o *op) count(out Outcome) int { return o.res.Count(out) }

// pendingCount returns how many masters have not answered yet.
func (o *op) pendingCount() int { return o.want - o.got }

// unexpected reports a reply of a type the command cannot produce.
func unexpected(v any) error { return fmt.Errorf("unexpected reply %T %v", v, v) }
