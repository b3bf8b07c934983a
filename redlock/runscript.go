package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Script is a caller's Lua script for RunScript, sent as EVALSHA with EVAL on NOSCRIPT.
// It exists so that locks written by other libraries can be released by their own
// protocols (delete and publish an unlock message, push a signal list) through the same
// multiplexed, deadline-bounded path as this library's own admin calls.
type Script struct{ s *script }

// NewScript prepares src for RunScript.
func NewScript(src string) *Script { return &Script{s: newScript(src)} }

// RunScript runs s with keys and args on every master at once and reports what each
// did. Keys are raw Redis keys: the client's key prefix is not applied, so RunScript can
// act on keys outside it. The script must follow the owner-checked reply convention of
// ReleaseValue: 1 done (OK), 0 nothing there (Absent), -1 another holder there (Taken);
// any other reply is Failed with the reply in Err. The error rule is that of the admin
// calls: err is nil when at least a quorum of masters answered. The first key must be
// non-empty and must not name a fence counter (FenceSuffix); nothing is sent otherwise.
func (c *Client) RunScript(ctx context.Context, s *Script, keys []string, args ...string) (Result, error) {
	if c.closed.Load() {
		return Result{}, ErrClosed
	}
	if s == nil || len(keys) == 0 || keys[0] == "" {
		return Result{}, fmt.Errorf("redlock: run-script: a script and a first key are required: %w", ErrInvalidResource)
	}
	if strings.HasSuffix(keys[0], FenceSuffix) {
		return Result{}, fmt.Errorf("redlock: run-script %q: %w: it names a fence counter", keys[0], ErrInvalidResource)
	}
	argv := make([]any, len(args))
	for i, a := range args {
		argv[i] = a
	}
	o := c.broadcastScript(keys[0], s.s, keys, argv...)
	err := o.gather(ctx, ownerChecked, nil)
	return o.res, c.adminErr("run-script", keys[0], o, err)
}

// RunScriptOn is RunScript on the masters listed only (indexes into the pools given to
// New): nothing is sent to the others, and the result holds the listed masters only.
// It is for locks that live on one server, not on a quorum: err is a *QuorumError
// unless every listed master answered.
func (c *Client) RunScriptOn(ctx context.Context, masters []int, s *Script, keys []string, args ...string) (Result, error) {
	if c.closed.Load() {
		return Result{}, ErrClosed
	}
	if s == nil || len(keys) == 0 || keys[0] == "" || len(masters) == 0 {
		return Result{}, fmt.Errorf("redlock: run-script: a script, a first key and a master are required: %w", ErrInvalidResource)
	}
	if strings.HasSuffix(keys[0], FenceSuffix) {
		return Result{}, fmt.Errorf("redlock: run-script %q: %w: it names a fence counter", keys[0], ErrInvalidResource)
	}
	for _, m := range masters {
		if m < 0 || m >= len(c.masters) {
			return Result{}, fmt.Errorf("redlock: run-script: no master %d", m)
		}
	}
	args2 := make([]any, 0, 2+len(keys)+len(args))
	args2 = append(args2, s.s.sha, len(keys))
	for _, k := range keys {
		args2 = append(args2, k)
	}
	for _, a := range args {
		args2 = append(args2, a)
	}
	o := c.sendTo(masters, keys[0], s.s, "EVALSHA", args2)
	err := o.gather(ctx, ownerChecked, nil)
	res := Result{}
	for _, nr := range o.res.Nodes {
		if slices.Contains(masters, nr.Master) {
			res.Nodes = append(res.Nodes, nr)
		}
	}
	if res.Reachable() < len(masters) {
		qe := &QuorumError{Op: "run-script", Resource: keys[0], Quorum: len(masters), Result: res, Err: ErrNoQuorum}
		if err != nil {
			qe.Err = fmt.Errorf("%w: %w", ErrNoQuorum, err)
		}
		return res, qe
	}
	return res, err
}
