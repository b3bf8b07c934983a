// Package lockrun runs a command only while a Redlock lock is held: it acquires the
// lock through the redlock library, starts the command in its own process group, keeps
// the lock alive every ttl/3 (redlock.Client.Do), and stops the whole group (SIGTERM,
// then SIGKILL after a grace period) the moment the lock can no longer be proven held.
// It is what `redlockctl run` is made of.
//
// It must never let the command run on without the lock: when an extension fails or
// the lock's local deadline passes, the group is signalled at once, and the lock is
// released only after the command has exited. It never touches a lock value that is
// not its own (release is the library's owner-checked delete), and it reads other
// holders' values only to name them. It knows nothing of config files, the console or
// the audit log format: the caller passes redlock options and receives Events.
package lockrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/internal/exitcode"
	"github.com/redlockctl/redlockctl/redlock"
)

// Exit codes of a run, besides the command's own (0-255; a command killed by signal n
// gives 128+n, as shells report it).
const (
	// ExitNotAcquired: the lock is held elsewhere (no --wait, or the wait ran out), or
	// fewer than a quorum of masters answered; the command was not started.
	ExitNotAcquired = exitcode.NotAcquired
	// ExitUsage: the Job cannot work (empty command, bad durations, bad owner), or the
	// lock cannot be kept with the user's permissions.
	ExitUsage = exitcode.Usage
	// ExitLost: the lock was lost while the command ran (an extension failed, or the
	// local deadline passed before one succeeded); the command was stopped.
	ExitLost = exitcode.Lost
	// ExitCannotExecute: the command exists but could not be executed.
	ExitCannotExecute = exitcode.CannotExecute
	// ExitNotFound: the command was not found.
	ExitNotFound = exitcode.NotFound
)

// Event names, in the order a run emits them: Acquired once the lock is held (before the
// command starts), then Released after the command exited and the lock was released,
// or Lost when the lock was lost while the command ran.
const (
	Acquired = "run-acquire"
	Released = "run-release"
	Lost     = "run-lost"
)

// Env names the variables the command finds in its environment (inherited ones with
// these names are removed first, so a nested run never sees its parent's lock).
const (
	EnvResource   = "REDLOCK_RESOURCE"    // the resource name
	EnvValue      = "REDLOCK_VALUE"       // the lock's value, owner#hex[#token]
	EnvValidityMs = "REDLOCK_VALIDITY_MS" // validity left when the command started, in ms
	EnvToken      = "REDLOCK_TOKEN"       // the fence token (only with fencing)
)

// Job is one run: the lock to hold and the command to run while it is held.
type Job struct {
	Resource string
	TTL      time.Duration // lock TTL; extended every TTL/3
	Wait     time.Duration // 0: one attempt; otherwise keep trying for up to this long
	Grace    time.Duration // between SIGTERM and SIGKILL
	Owner    string        // owner part of the lock value ("" = the options' or host:pid)
	Args     []string      // the command and its arguments; Args[0] is looked up in PATH

	// Env is the command's base environment (nil: os.Environ()).
	Env []string
	// Unset names variables removed from that environment: the ones that hold the
	// masters' passwords, which the command has no business with.
	Unset []string
	// Stdin, Stdout, Stderr are the command's (nil: /dev/null). An *os.File is given to
	// the command itself; other readers and writers are copied, for at most a second
	// after the command exited (a forked process may hold the pipe).
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// Signals carries signals to pass on: while waiting for the lock one aborts the run;
	// once the command runs each is sent to its process group, and the command gets
	// Grace to exit before SIGKILL. Nil: none.
	Signals <-chan os.Signal
	// Event, when set, is called (synchronously) with each Event of the run.
	Event func(Event)
	// ReadTimeout bounds the read-only GETs (through the client, so routed as the
	// lock's commands are) that name the holder of a lock held elsewhere and look where
	// the value is after acquire and release (default 500ms).
	ReadTimeout time.Duration
	// NewClient, when set, builds the client from the options instead of
	// redlock.New(pools, ...): for Sentinel groups and clusters (config.Client).
	NewClient func(opts ...redlock.Option) (*redlock.Client, error)
}

// Event is one step of a run, for the audit log.
type Event struct {
	Action   string // Acquired, Released or Lost
	Time     time.Time
	Resource string
	Value    string
	Token    int64
	Quorum   int
	Validity time.Duration // Acquired: validity left when the command was started
	// Nodes says per master, from a read-only look right after the step, where the
	// value is. Acquired: OK where it is stored, Taken where another value is, Absent
	// where none is. Released and Lost: OK where it is gone, Taken where another value
	// is there now, Failed with ErrStillThere where it is still there (it expires with
	// its TTL). Timeout, Failed or Refused where the master did not answer the look.
	Nodes []redlock.NodeResult
	// ExitCode is the run's exit code (Released and Lost).
	ExitCode int
	// Err says why the lock was lost (Lost) or why the command could not start.
	Err error
}

// Result is how a run ended.
type Result struct {
	Code  int    // the exit code redlockctl run exits with
	Value string // the lock value, "" when it was not acquired
	Token int64  // the fence token, 0 unfenced or not acquired
	// Err is nil when the command ran and exited on its own (Code is then its exit
	// code); otherwise it says, in one line, why: *HeldError, a wait that ran out, a
	// start failure, or an error wrapping redlock.ErrLockLost.
	Err error
}

// HeldError says that the lock is held elsewhere: Owner is the holder's owner as parsed
// from its value ("" when the value is not one this library writes), Holders how many
// masters hold it.
type HeldError struct {
	Resource string
	Owner    string
	Value    string // the holder's value, as read ("" when none was seen)
	Holders  int
	Answered int // masters that answered the read
	Masters  int
	Waited   time.Duration // how long the run waited (0: a single attempt)
	// NotCounted says, per master that took the attempt but restarted too recently to
	// count toward a quorum (the restart guard), why.
	NotCounted []string
	// Attempt is the last attempt's failure, nil when the wait ended in the middle of
	// one: its per-master results say which masters took it, and why those that did
	// were not counted.
	Attempt *redlock.QuorumError
}

// Error reads e.g. `"billing:nightly" is held by worker-1@host-7 (3 of 5 masters)`.
func (e *HeldError) Error() string {
	wait := ""
	if e.Waited > 0 {
		wait = fmt.Sprintf(" after waiting %v", e.Waited)
	}
	guard := ""
	if len(e.NotCounted) > 0 {
		guard = "; not counted: " + strings.Join(e.NotCounted, "; ")
	}
	switch {
	case len(e.NotCounted) > 0 && e.Value == "":
		return fmt.Sprintf("%q not acquired%s: masters that restarted recently do not count toward a quorum%s", e.Resource, wait, guard)
	case e.Value == "" && e.Answered < e.Masters/2+1:
		return fmt.Sprintf("%q not acquired%s: only %d of %d masters answered", e.Resource, wait, e.Answered, e.Masters)
	case e.Value == "":
		return fmt.Sprintf("%q not acquired%s: held elsewhere, but no holder is seen now (%d of %d masters answered)", e.Resource, wait, e.Answered, e.Masters)
	case e.Owner == "":
		return fmt.Sprintf("%q is held by unknown owner (value %s, %d of %d masters)%s%s", e.Resource, printable(e.Value), e.Holders, e.Masters, wait, guard)
	}
	return fmt.Sprintf("%q is held by %s (%d of %d masters)%s%s", e.Resource, printable(e.Owner), e.Holders, e.Masters, wait, guard)
}

// Unwrap makes errors.Is(err, redlock.ErrNotAcquired) true, and errors.As reach the
// last attempt's *redlock.QuorumError.
func (e *HeldError) Unwrap() []error {
	if e.Attempt == nil {
		return []error{redlock.ErrNotAcquired}
	}
	return []error{redlock.ErrNotAcquired, e.Attempt}
}

// printable quotes s when it holds anything a terminal could misread.
func printable(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// errWaitOver and interrupted end a run that was still waiting for the lock.
var errWaitOver = errors.New("wait over")

type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

// check returns why j cannot run, or nil.
func (j *Job) check() error {
	switch {
	case j.Resource == "":
		return errors.New("empty resource")
	case len(j.Args) == 0 || j.Args[0] == "":
		return errors.New("empty command")
	case j.TTL <= 0:
		return fmt.Errorf("ttl %v: must be > 0", j.TTL)
	case j.Wait < 0:
		return fmt.Errorf("wait %v: must not be negative", j.Wait)
	case j.Grace < 0:
		return fmt.Errorf("grace %v: must not be negative", j.Grace)
	}
	return nil
}

// Run acquires j.Resource on the masters behind pools (opts are the client's options:
// key prefix, fencing, node timeout, drift...; Run sets the retries from j.Wait and the
// owner from j.Owner), runs j.Args while the lock is held and releases it after the
// command exited. It returns the exit code and why the run ended; see the Exit
// constants. ctx ending stops the command as a signal does (SIGTERM, SIGKILL after
// j.Grace). Where there are no POSIX process groups (Windows), Run refuses with
// ExitUsage before it acquires anything.
func Run(ctx context.Context, pools []*redis.Pool, opts []redlock.Option, j Job) Result {
	if err := j.check(); err != nil {
		return Result{Code: ExitUsage, Err: err}
	}
	if err := supported(); err != nil {
		return Result{Code: ExitUsage, Err: err}
	}
	opts = append(append([]redlock.Option{}, opts...), redlock.WithRetries(0))
	if j.Wait > 0 {
		opts = append(opts, redlock.WithRetries(1<<30)) // bounded by j.Wait instead
	}
	if j.Owner != "" {
		opts = append(opts, redlock.WithOwner(j.Owner))
	}
	newClient := func(o ...redlock.Option) (*redlock.Client, error) { return redlock.New(pools, o...) }
	if j.NewClient != nil {
		newClient = j.NewClient
	}
	client, err := newClient(opts...)
	if err != nil {
		return Result{Code: ExitUsage, Err: err}
	}
	defer client.Close()
	if j.ReadTimeout <= 0 {
		j.ReadTimeout = 500 * time.Millisecond
	}
	r := &runner{job: j, client: client, fwd: make(chan os.Signal, 16)}
	return r.run(ctx)
}

// Run states: waiting for the lock, running the command, or given up waiting.
const (
	waiting int32 = iota
	running
	abandoned
)

type runner struct {
	job    Job
	client *redlock.Client
	state  atomic.Int32
	fwd    chan os.Signal // signals received while running, for the command's group
}

func (r *runner) run(ctx context.Context) Result {
	j := &r.job
	actx, abandon := context.WithCancelCause(ctx)
	defer abandon(nil)
	give := func(cause error) {
		if r.state.CompareAndSwap(waiting, abandoned) {
			abandon(cause)
		}
	}
	bound := j.Wait
	if bound == 0 {
		bound = j.TTL // one attempt can never usefully take longer than the TTL
	}
	timer := time.AfterFunc(bound, func() { give(errWaitOver) })
	defer timer.Stop()
	stop := make(chan struct{})
	defer close(stop)
	go r.relaySignals(stop, give)

	if perm := r.prove(actx); perm != "" {
		return Result{Code: ExitUsage, Err: fmt.Errorf("the lock could be taken but neither extended nor released: %s: grant the user EVALSHA and EVAL (ACL +evalsha +eval); the lock was not taken and the command was not started", perm)}
	}
	var res Result
	var lock *redlock.Lock
	err := r.client.Do(actx, j.Resource, j.TTL, func(fctx context.Context) error {
		if !r.state.CompareAndSwap(waiting, running) {
			return context.Cause(actx) // the wait ended as the lock came: let it go
		}
		lock = redlock.LockFrom(fctx)
		res.Value, res.Token = lock.Value(), lock.Token()
		nodes := r.look(lock, false)
		r.emit(Event{Action: Acquired, Value: lock.Value(), Token: lock.Token(), Validity: lock.Validity(), Nodes: nodes})
		res.Code, res.Err = r.command(fctx, lock)
		return nil
	})
	switch {
	case lock == nil:
		return r.notAcquired(ctx, err, context.Cause(actx))
	case errors.Is(err, redlock.ErrLockLost):
		res.Code, res.Err = ExitLost, err
		r.emit(Event{Action: Lost, Value: res.Value, Token: res.Token, Nodes: r.look(lock, true), ExitCode: res.Code, Err: err})
		return res
	}
	r.emit(Event{Action: Released, Value: res.Value, Token: res.Token, Nodes: r.look(lock, true), ExitCode: res.Code, Err: res.Err})
	return res
}

// relaySignals turns a signal into the end of the wait while waiting, and passes it to
// the command once it runs.
func (r *runner) relaySignals(stop <-chan struct{}, give func(error)) {
	if r.job.Signals == nil {
		return
	}
	for {
		select {
		case <-stop:
			return
		case s := <-r.job.Signals:
			if r.state.Load() == waiting {
				give(interrupted{s})
			}
			if r.state.Load() == running {
				select {
				case r.fwd <- s:
				default: // the command has signals enough queued
				}
			}
		}
	}
}

// notAcquired explains a run that never got the lock (err is what Do returned, cause
// why the wait was given up, if it was).
func (r *runner) notAcquired(ctx context.Context, err, cause error) Result {
	var in interrupted
	switch {
	case errors.As(cause, &in):
		return Result{Code: r.abandonedCode(cause), Err: fmt.Errorf("%q not acquired: %w while waiting", r.job.Resource, in)}
	case ctx.Err() != nil:
		return Result{Code: ExitNotAcquired, Err: fmt.Errorf("%q not acquired: %w", r.job.Resource, context.Cause(ctx))}
	case errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, errWaitOver):
		// (errWaitOver: the lock came as the wait ended, and was let go.)
		return Result{Code: ExitNotAcquired, Err: r.holder(err)}
	}
	// Refused before anything was sent: ErrInvalidResource, a TTL within the drift. (The
	// wait may have run out meanwhile, during the permission check: it is still usage.)
	return Result{Code: ExitUsage, Err: err}
}

// abandonedCode is the exit code of a run ended while waiting: 128+n for a signal.
func (r *runner) abandonedCode(cause error) int {
	var in interrupted
	if errors.As(cause, &in) {
		if n, ok := signalNumber(in.sig); ok {
			return 128 + n
		}
	}
	return ExitNotAcquired
}

func (r *runner) emit(e Event) {
	if r.job.Event == nil {
		return
	}
	e.Time = time.Now().UTC()
	e.Resource = r.job.Resource
	e.Quorum = r.client.Quorum()
	r.job.Event(e)
}

// refusal returns the first master's refusal of a command for lack of permission
// ("NOPERM ..."), "" when err is no such refusal.
// permissionProbe is the value prove extends: one no lock holds.
const permissionProbe = "redlockctl-run:permission-check"

// prove reports the refusal ("" none) of the lock's extension for a user that may SET
// but not run the extend script: its command would be killed at the first keep-alive,
// and the lock could not be released (the release is the same command). It extends a
// value no lock holds, so it changes no key: an extension of the lock itself, right
// after its acquisition, would be a change that a live feed cannot tell from a
// release without reading.
func (r *runner) prove(ctx context.Context) string {
	res, err := r.client.ExtendValue(ctx, r.job.Resource, permissionProbe, r.job.TTL)
	if err != nil {
		return refusal(err)
	}
	for _, n := range res.Nodes {
		if n.Outcome == redlock.Refused && n.Err != nil && strings.HasPrefix(n.Err.Error(), "NOPERM") {
			return n.Err.Error()
		}
	}
	return ""
}

func refusal(err error) string {
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		for _, n := range qe.Result.Nodes {
			if n.Outcome == redlock.Refused && n.Err != nil && strings.HasPrefix(n.Err.Error(), "NOPERM") {
				return n.Err.Error()
			}
		}
	}
	if strings.Contains(err.Error(), "NOPERM") {
		return "NOPERM"
	}
	return ""
}
