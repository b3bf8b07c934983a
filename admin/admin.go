// Package admin performs operator actions on locks (acquire, extend, release,
// force-release, keep-alive) through the redlock library only, behind the one read-only
// gate (ErrReadOnly), and appends each action to the audit log. It never sends a write
// command in read-only mode, never deletes without saying what it deleted on which
// master, and never writes a secret to the audit log.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/internal/exitcode"
	"github.com/redlockctl/redlockctl/redlock"
)

// ErrReadOnly is returned by every Actions method when the config or flags say read-only.
// It is the single gate through which every write command passes.
var ErrReadOnly = errors.New("read-only: no write command is sent")

// ErrAudit is returned, wrapped with the reason, by every audited Actions method whose
// intent line could not be written to the audit log: nothing was sent.
var ErrAudit = errors.New("the audit log cannot be written: nothing was sent")

// OutcomeUnknown is a master's outcome when the command got no reply in time: it may
// have been sent and may still apply (a paused master runs it when it resumes).
const OutcomeUnknown = "unknown"

// OutcomeUntouched is a master's outcome in the force-release of a single-instance
// lock that lives elsewhere: nothing was sent there, and nothing there was the lock's.
const OutcomeUntouched = "untouched"

// ExitUnknown is the exit code of an action done on fewer than a quorum of masters
// but whose outcome is unknown on enough others to reach one: look before retrying.
const ExitUnknown = exitcode.Unknown

// Audit line phases: an intent line (what will be sent, per master) is on disk before
// the first command goes out; the outcome line follows. Both are fsynced.
const (
	PhaseIntent  = "intent"
	PhaseOutcome = "outcome"
)

// Actions action names, as written in ActionResult.Action and the audit log.
const (
	ActionAcquire         = "acquire"
	ActionExtend          = "extend"
	ActionRelease         = "release"
	ActionForceRelease    = "force-release"
	ActionForceReleaseAny = "force-release-any"
)

// Actions performs operator actions (acquire, extend, release, force-release) through the
// redlock library and appends each one to the audit log.
type Actions struct {
	cfg      *config.Config
	client   *redlock.Client
	operator string
	pools    []*redis.Pool
}

// NodeOutcome is one master's part of an admin action: in an intent line what will be
// sent there (Outcome "planned"), in an outcome line what happened.
type NodeOutcome struct {
	Master  string `json:"master"`
	Outcome string `json:"outcome"` // redlock.Outcome.String(), or "planned"
	// Command is what is sent to the master (e.g. "compare-and-delete", "SET NX PX");
	// Value the value it compares or deletes there, when the plan names one.
	Command string `json:"command,omitempty"`
	Value   string `json:"value,omitempty"`
	Error   string `json:"error,omitempty"`
	// ErrorKind classifies Error when the master failed or refused (see package errkind).
	ErrorKind errkind.Kind `json:"error_kind,omitempty"`
}

// ActionResult is what an admin action did, per master; it is also the audit log line.
type ActionResult struct {
	// Phase is PhaseIntent for the line written before the first command is sent,
	// PhaseOutcome for the line written after; "" in results never audited.
	Phase    string        `json:"phase,omitempty"`
	Time     time.Time     `json:"time"`
	Operator string        `json:"operator"` // user@host
	Action   string        `json:"action"`   // "acquire", "extend", "release", "force-release", "force-release-any"; `run`: "run-acquire", "run-release", "run-lost"
	Resource string        `json:"resource"`
	Value    string        `json:"value"`
	Token    int64         `json:"token,omitempty"`
	Validity time.Duration `json:"validity_ms,omitempty"`
	// Library and Protocol name, for a release, whose lock it was and the release
	// protocol followed (see inspect/locks); empty for this project's own actions by name.
	Library  string        `json:"library,omitempty"`
	Protocol string        `json:"protocol,omitempty"`
	Quorum   int           `json:"quorum"`
	Done     int           `json:"done"` // masters where it took effect
	Up       int           `json:"up"`   // masters that answered
	Nodes    []NodeOutcome `json:"nodes"`
	Error    string        `json:"error,omitempty"`
	// RunExit is the exit code a `redlockctl run` ended with ("run-release",
	// "run-lost"); nil for every other action.
	RunExit *int `json:"run_exit,omitempty"`
	// AuditError says the audit log could not be written (the action itself is
	// described by the other fields); it never appears in the audit log.
	AuditError string `json:"-"`
}

// actionJSON is ActionResult's wire form: validity in whole milliseconds.
type actionJSON struct {
	Phase      string        `json:"phase,omitempty"`
	Time       time.Time     `json:"time"`
	Operator   string        `json:"operator"`
	Action     string        `json:"action"`
	Resource   string        `json:"resource"`
	Value      string        `json:"value"`
	Token      int64         `json:"token,omitempty"`
	ValidityMs int64         `json:"validity_ms,omitempty"`
	Library    string        `json:"library,omitempty"`
	Protocol   string        `json:"protocol,omitempty"`
	Quorum     int           `json:"quorum"`
	Done       int           `json:"done"`
	Up         int           `json:"up"`
	Nodes      []NodeOutcome `json:"nodes"`
	Error      string        `json:"error,omitempty"`
	RunExit    *int          `json:"run_exit,omitempty"`
	AuditError string        `json:"audit_error,omitempty"`
}

// MarshalJSON writes the result with validity_ms in milliseconds (not nanoseconds).
func (r ActionResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(actionJSON{
		Phase: r.Phase, Time: r.Time, Operator: r.Operator, Action: r.Action, Resource: r.Resource,
		Value: r.Value, Token: r.Token, ValidityMs: r.Validity.Milliseconds(),
		Library: r.Library, Protocol: r.Protocol, Quorum: r.Quorum, Done: r.Done, Up: r.Up, Nodes: r.Nodes, Error: r.Error,
		RunExit: r.RunExit, AuditError: r.AuditError,
	})
}

// UnmarshalJSON reads what MarshalJSON writes (an audit log line, `-o json` output).
func (r *ActionResult) UnmarshalJSON(b []byte) error {
	var j actionJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = ActionResult{
		Phase: j.Phase, Time: j.Time, Operator: j.Operator, Action: j.Action, Resource: j.Resource,
		Value: j.Value, Token: j.Token, Validity: time.Duration(j.ValidityMs) * time.Millisecond,
		Library: j.Library, Protocol: j.Protocol, Quorum: j.Quorum, Done: j.Done, Up: j.Up, Nodes: j.Nodes, Error: j.Error,
		RunExit: j.RunExit, AuditError: j.AuditError,
	}
	return nil
}

// releasing reports whether the action deletes (a master where the value is already
// gone is then settled, not failed).
func (r ActionResult) releasing() bool {
	switch r.Action {
	case ActionRelease, ActionForceRelease, ActionForceReleaseAny:
		return true
	}
	return false
}

// Settled counts the masters that are where the action wanted them: for acquire and
// extend the ones where it took effect; for the compare-and-delete releases also the
// ones where the value was already gone (absent, or replaced by another value); for
// force-release-any the ones where the key is gone; for a single-instance lock's
// force-release the masters it left untouched.
func (r ActionResult) Settled() int {
	if !r.releasing() {
		return r.Done
	}
	n := 0
	for _, nd := range r.Nodes {
		switch nd.Outcome {
		case redlock.OK.String(), redlock.Absent.String(), OutcomeUntouched:
			n++
		case redlock.Taken.String(): // another value is there: ours is gone
			if r.Action != ActionForceReleaseAny {
				n++
			}
		}
	}
	return n
}

// Untouched counts the masters a single-instance lock's force-release sent nothing to.
func (r ActionResult) Untouched() int {
	n := 0
	for _, nd := range r.Nodes {
		if nd.Outcome == OutcomeUntouched {
			n++
		}
	}
	return n
}

// ExitCode maps a result to the admin exit codes: 0 done on every reachable master,
// 3 done on a quorum but not every master, 1 not done, ExitUnknown (4) done on fewer
// than a quorum but unknown (no reply) on enough others to make one.
//
// "Done on every master" counts a master as done when the action took effect there or,
// for the releases, when the value was already gone; a master that did not answer is
// never done, so one master down gives 3. A release that deleted nothing anywhere is 1.
func (r ActionResult) ExitCode() int {
	unknown := 0
	for _, n := range r.Nodes {
		if n.Outcome == OutcomeUnknown {
			unknown++
		}
	}
	settled := r.Settled()
	switch {
	case r.Quorum <= 0:
		return exitcode.Failure
	case settled < r.Quorum && settled+unknown >= r.Quorum:
		return ExitUnknown
	case r.Done == 0:
		return exitcode.Failure
	case !r.releasing() && r.Error != "":
		return exitcode.Failure
	case settled == len(r.Nodes):
		return exitcode.OK
	case settled >= r.Quorum:
		return exitcode.Findings
	default:
		return exitcode.Failure
	}
}

// New returns an Actions acting through client, which must be built on pools (one
// per cfg.Masters entry); the pools also serve the read-only looks that say where an
// acquired value landed. It writes to cfg.AuditLog when set. With cfg.ReadOnly, client
// may be nil: every action is refused before anything is sent.
func New(cfg *config.Config, client *redlock.Client, pools []*redis.Pool) *Actions {
	return &Actions{cfg: cfg, client: client, pools: pools, operator: Operator()}
}

// ReadOnly reports whether the gate refuses every action.
func (a *Actions) ReadOnly() bool { return a.cfg == nil || a.cfg.ReadOnly }

// gate is the one check in front of every write: nothing is sent when it says no.
func (a *Actions) gate() error {
	if a.ReadOnly() {
		return ErrReadOnly
	}
	if a.client == nil {
		return errors.New("admin: no redlock client")
	}
	return nil
}

// Acquire takes resource for ttl as owner ("" = default); keep-alive is the caller's.
func (a *Actions) Acquire(ctx context.Context, resource string, ttl time.Duration, owner string) (*redlock.Lock, ActionResult, error) {
	if err := a.gate(); err != nil {
		return nil, ActionResult{}, err
	}
	client := a.client
	if owner != "" {
		c, err := a.cfg.Client(a.pools, append(a.cfg.LockOptions(), redlock.WithOwner(owner))...)
		if err != nil {
			return nil, ActionResult{}, fmt.Errorf("admin: owner %q: %w", owner, err)
		}
		defer c.Close()
		client = c
	}
	r, err := a.start(ActionAcquire, resource, "", a.everywhere("SET NX PX "+strconv.FormatInt(ttl.Milliseconds(), 10), ""))
	if err != nil {
		return nil, r, err
	}
	lock, err := client.Acquire(ctx, resource, ttl)
	if lock == nil {
		a.fill(&r, redlock.Result{}, err)
		return nil, a.finish(r), err
	}
	r.Value, r.Token, r.Validity = lock.Value(), lock.Token(), lock.Validity()
	a.fill(&r, a.heldWhere(ctx, resource, lock.Value()), nil)
	return lock, a.finish(r), nil
}

// heldWhere tells, per master, whether value is now stored for resource. Acquire returns
// as soon as a quorum agreed, so this read-only look is what says "on every master"; a
// straggler's SET may still be in flight, so masters that lack the value are looked at
// again until the node timeout (twice over) has passed.
func (a *Actions) heldWhere(ctx context.Context, resource, value string) redlock.Result {
	n := len(a.cfg.Masters)
	res := redlock.Result{Nodes: make([]redlock.NodeResult, n)}
	grace := 2 * max(a.cfg.Lock.NodeTimeout, 50*time.Millisecond)
	until := time.Now().Add(grace)
	for {
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.Inspect.Timeout+grace)
		snap, row := Observe(octx, a.cfg, a.pools, resource)
		cancel()
		missing := 0
		for i := range res.Nodes {
			nr := redlock.NodeResult{Master: i}
			switch {
			case !snap.Masters[i].Up:
				nr.Outcome, nr.Err = redlock.Failed, errors.New(snap.Masters[i].Error)
			case row.Nodes[i].Value == value:
				nr.Outcome = redlock.OK
			case row.Nodes[i].Value != "" || row.Nodes[i].Type != "none":
				nr.Outcome = redlock.Taken
			default:
				nr.Outcome = redlock.Absent
				missing++
			}
			res.Nodes[i] = nr
		}
		if missing == 0 || time.Now().After(until) {
			return res
		}
		time.Sleep(grace / 10)
	}
}

// Extend extends resource where it still holds value.
func (a *Actions) Extend(ctx context.Context, resource, value string, ttl time.Duration) (ActionResult, error) {
	if err := a.gate(); err != nil {
		return ActionResult{}, err
	}
	r, err := a.start(ActionExtend, resource, value, a.everywhere("compare-and-pexpire "+strconv.FormatInt(ttl.Milliseconds(), 10), value))
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	res, err := a.client.ExtendValue(ctx, resource, value, ttl)
	a.fill(&r, res, err)
	if err == nil && r.Done >= r.Quorum {
		if v := ttl - time.Since(t0) - a.cfg.Drift(ttl); v > 0 {
			r.Validity = v
		}
	}
	return a.finish(r), err
}

// Renew is one keep-alive extension of l, a lock Acquire returned: Extend through the
// library, bounded by the lock's local deadline, and without an audit line (the acquire
// and the release that frame a held lock are audited). It fails, with an error wrapping
// redlock.ErrLockLost, once the lock cannot be proven held: the local deadline passed,
// or fewer than a quorum of masters extended it.
func (a *Actions) Renew(ctx context.Context, l *redlock.Lock, ttl time.Duration) (ActionResult, error) {
	if err := a.gate(); err != nil {
		return ActionResult{}, err
	}
	if l == nil {
		return ActionResult{}, errors.New("admin: renew: no lock")
	}
	r := a.newResult(ActionExtend, l.Resource(), l.Value())
	ectx, cancel := context.WithDeadline(ctx, l.Until())
	defer cancel()
	err := a.client.Extend(ectx, l, ttl)
	if err != nil && !errors.Is(err, redlock.ErrLockLost) && ctx.Err() == nil {
		err = fmt.Errorf("%w: %w", redlock.ErrLockLost, err) // the deadline passed first
	}
	a.fill(&r, redlock.Result{}, err)
	if err == nil { // Extend returns at quorum, without per-master outcomes
		r.Nodes, r.Done, r.Up, r.Validity = nil, r.Quorum, r.Quorum, l.Validity()
	}
	return r, err
}

// Release deletes resource where it still holds value (compare-and-delete): the
// operator's own lock, whose value they know. A lock observed rather than owned is
// force-released through a ForcePlan (ForceRelease).
func (a *Actions) Release(ctx context.Context, resource, value string) (ActionResult, error) {
	if err := a.gate(); err != nil {
		return ActionResult{}, err
	}
	if value == "" {
		return ActionResult{}, errors.New("admin: release needs the value to compare")
	}
	r, err := a.start(ActionRelease, resource, value, a.everywhere("compare-and-delete", value))
	if err != nil {
		return r, err
	}
	res, err := a.client.ReleaseValue(ctx, resource, value)
	a.fill(&r, res, err)
	return a.finish(r), err
}

// ReleaseLock releases the lock l, observed (and decoded) at its key, by its holder's
// value, the way its library expects: l.Release.Checked deletes only where l.Holder is
// still there, and wakes the library's waiters (Redisson's unlock message,
// python-redis-lock's signal list, spring's unlock channel). It is audited as a
// release; the audit line names the library and the protocol. A lock whose library
// redlockctl does not release (l.Release.Unsupported) is refused before anything is
// sent. Deleting a value the operator does not hold goes through a ForcePlan.
func (a *Actions) ReleaseLock(ctx context.Context, resource string, l locks.Lock) (ActionResult, error) {
	if err := a.gate(); err != nil {
		return ActionResult{}, err
	}
	plan := l.Release
	if !plan.Supported() {
		why := plan.Unsupported
		if why == "" {
			why = "no release plan (nothing observed to release)"
		}
		return ActionResult{}, fmt.Errorf("admin: %s %q: %s", ActionRelease, resource, why)
	}
	r, err := a.start(ActionRelease, resource, l.Holder, a.everywhere(commandOf(plan.Protocol, plan.Checked), l.Holder))
	if err != nil {
		return r, err
	}
	r.Library, r.Protocol = l.Label(), plan.Protocol
	res, err := a.client.RunScript(ctx, redlock.NewScript(plan.Checked.Lua), plan.Checked.Keys, plan.Checked.Args...)
	a.fill(&r, res, err)
	return a.finish(r), err
}

// commandOf is what a release script sends, as the plan and the audit log state it:
// its Command, or the protocol's name for a script that states none.
func commandOf(protocol string, s locks.Script) string {
	if s.Command != "" {
		return s.Command
	}
	return protocol
}

// KeepAlive extends l to ttl every ttl/3 until ctx is done (it returns nil) or an
// extension fails (it returns that error, e.g. redlock.ErrLockLost). The extensions are
// not written to the audit log: the acquire and the release that frame them are.
func (a *Actions) KeepAlive(ctx context.Context, l *redlock.Lock, ttl time.Duration) error {
	if err := a.gate(); err != nil {
		return err
	}
	every := ttl / 3
	if every <= 0 {
		every = time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		// Bound each extension by the time the lock has left, so a hung master
		// cannot keep us past the deadline.
		ectx, cancel := context.WithDeadline(ctx, l.Until())
		err := a.client.Extend(ectx, l, ttl)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func (a *Actions) newResult(action, resource, value string) ActionResult {
	return ActionResult{
		Time:     time.Now().UTC(),
		Operator: a.operator,
		Action:   action,
		Resource: resource,
		Value:    value,
		Quorum:   a.cfg.Quorum(),
	}
}

// start returns the result of an action about to be sent, once its intent line (each
// master's planned command) is on disk; an error wraps ErrAudit and nothing may be sent.
func (a *Actions) start(action, resource, value string, planned []NodeOutcome) (ActionResult, error) {
	r := a.newResult(action, resource, value)
	in := r
	in.Phase, in.Nodes = PhaseIntent, planned
	path, err := AuditPath(a.cfg)
	if err == nil {
		err = AppendAudit(path, in)
	}
	if err != nil {
		return r, fmt.Errorf("admin: %s %q: %w (%s)", action, resource, ErrAudit, a.redact(err.Error()))
	}
	return r, nil
}

// everywhere plans command (on value, when one is compared) on every master.
func (a *Actions) everywhere(command, value string) []NodeOutcome {
	ns := make([]NodeOutcome, len(a.cfg.Masters))
	for i := range ns {
		ns[i] = NodeOutcome{Master: a.masterName(i), Outcome: "planned", Command: command, Value: value}
	}
	return ns
}

// fill records res (per-master outcomes, in master order) and err into r.
func (a *Actions) fill(r *ActionResult, res redlock.Result, err error) {
	var qe *redlock.QuorumError
	if len(res.Nodes) == 0 && errors.As(err, &qe) {
		res = qe.Result
	}
	n := len(a.cfg.Masters)
	r.Nodes = make([]NodeOutcome, n)
	for i := range r.Nodes {
		r.Nodes[i] = NodeOutcome{Master: a.masterName(i), Outcome: "not-sent"}
		if err != nil {
			r.Nodes[i].Error = a.redact(err.Error())
		}
	}
	r.Done, r.Up = 0, 0
	for _, nr := range res.Nodes {
		if nr.Master < 0 || nr.Master >= n {
			continue
		}
		no := NodeOutcome{Master: a.masterName(nr.Master), Outcome: nr.Outcome.String()}
		if nr.Outcome == redlock.Timeout && r.Action != ActionAcquire {
			// The command may sit in the master's socket and run when it wakes: not a
			// failure, and not to be retried blindly.
			no.Outcome = OutcomeUnknown
		}
		if nr.Err != nil {
			no.Error = a.redact(nr.Err.Error())
			switch nr.Outcome {
			case redlock.Failed, redlock.Timeout, redlock.Refused:
				no.ErrorKind = errkind.Of(nr.Err)
			}
		}
		r.Nodes[nr.Master] = no
		switch nr.Outcome {
		case redlock.OK:
			r.Done++
			r.Up++
		case redlock.Timeout, redlock.Failed:
		default:
			r.Up++
		}
	}
	if err != nil {
		msg := err.Error()
		if qe != nil && qe.Err != nil {
			// The per-master outcomes are in Nodes, under the masters' names; the
			// library's text would repeat them by index.
			msg = fmt.Sprintf("%s: %d/%d masters ok, quorum %d", qe.Err, r.Done, n, r.Quorum)
		}
		r.Error = a.redact(msg)
	}
}

// finish writes r to the audit log as the outcome line; a failed write is reported in
// r.AuditError (the commands have been sent by then).
func (a *Actions) finish(r ActionResult) ActionResult {
	r.Phase = PhaseOutcome
	path, err := AuditPath(a.cfg)
	if err == nil {
		err = AppendAudit(path, r)
	}
	if err != nil {
		r.AuditError = a.redact(err.Error())
	}
	return r
}

func (a *Actions) masterName(i int) string {
	if i >= 0 && i < len(a.cfg.Masters) && a.cfg.Masters[i].Name != "" {
		return a.cfg.Masters[i].Name
	}
	return fmt.Sprintf("m%d", i+1)
}
