package lockrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlockctl/redlockctl/redlock"
)

// groupPoll is how often a stopping run looks whether the command's process group has
// emptied after the command itself exited.
const groupPoll = 20 * time.Millisecond

// killDrain bounds the wait for the group to vanish after SIGKILL.
const killDrain = 2 * time.Second

// command starts the job's command in a new process group, with the lock in its
// environment, and supervises it until it exits: ctx ending (the lock was lost, or the
// caller's context ended) and forwarded signals stop it. It returns the exit code and,
// when the command could not be started, why (126 or 127 then).
func (r *runner) command(ctx context.Context, l *redlock.Lock) (int, error) {
	j := &r.job
	if ctx.Err() != nil { // lost before the command started: it never runs
		return ExitLost, context.Cause(ctx)
	}
	cmd := exec.Command(j.Args[0], j.Args[1:]...)
	cmd.Env = environ(j.Env, j.Unset, l)
	if j.Stdin != nil {
		cmd.Stdin = j.Stdin
	}
	if j.Stdout != nil {
		cmd.Stdout = j.Stdout
	}
	if j.Stderr != nil {
		cmd.Stderr = j.Stderr
	}
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return startCode(err), fmt.Errorf("cannot run the command: %w", err)
	}
	return r.supervise(ctx, cmd), nil
}

// supervise waits for cmd. A forwarded signal goes to cmd's whole process group; ctx
// ending sends it SIGTERM. Either starts the grace period, at whose end the group gets
// SIGKILL. Once stopping, supervise returns only when the group is empty (what the
// command forked must not outlive the lock either), or killDrain after the SIGKILL
// should a process linger (one stuck in the kernel dies when it gets out).
func (r *runner) supervise(ctx context.Context, cmd *exec.Cmd) int {
	pgid := cmd.Process.Pid
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- exitCode(cmd.ProcessState)
	}()
	var (
		code     int
		leaderUp = true
		stopping bool
		grace    <-chan time.Time
		drained  <-chan time.Time
		done     = ctx.Done()
	)
	poll := time.NewTicker(groupPoll)
	defer poll.Stop()
	stop := func(s os.Signal) {
		signalGroup(pgid, s)
		if !stopping {
			stopping = true
			grace = time.After(r.job.Grace)
		}
	}
	for {
		select {
		case code = <-exited:
			leaderUp = false
			if !stopping {
				return code // exited on its own: what it leaves behind is its business
			}
		case s := <-r.fwd:
			stop(s)
		case <-done:
			done = nil
			stop(syscall.SIGTERM)
		case <-grace:
			grace = nil
			signalGroup(pgid, syscall.SIGKILL)
			drained = time.After(killDrain)
		case <-drained:
			if !leaderUp {
				return code
			}
		case <-poll.C:
		}
		if stopping && !leaderUp && !groupAlive(pgid) {
			return code
		}
	}
}

func signalNumber(s os.Signal) (int, bool) {
	n, ok := s.(syscall.Signal)
	return int(n), ok
}

// exitCode is the code a shell reports for ps: the exit status, or 128+n after signal n.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return ExitCannotExecute // never waited for: cannot happen after a successful Start
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// startCode maps a start failure to the shells' codes: 127 not found, 126 found but
// not executable (permission, not an executable format, a directory, ...).
func startCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, exec.ErrDot) || errors.Is(err, fs.ErrNotExist) {
		return ExitNotFound
	}
	return ExitCannotExecute
}

// environ is base (nil: os.Environ()) without inherited REDLOCK_* variables of Env and
// without the variables named in unset, plus the lock's.
func environ(base, unset []string, l *redlock.Lock) []string {
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case EnvResource, EnvValue, EnvValidityMs, EnvToken:
			continue
		}
		if slices.Contains(unset, name) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		EnvResource+"="+l.Resource(),
		EnvValue+"="+l.Value(),
		EnvValidityMs+"="+strconv.FormatInt(l.Validity().Milliseconds(), 10),
	)
	if t := l.Token(); t > 0 {
		env = append(env, EnvToken+"="+strconv.FormatInt(t, 10))
	}
	return env
}
