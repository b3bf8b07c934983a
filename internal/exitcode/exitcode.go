// Package exitcode defines, once, every exit code redlockctl returns, so that scripts
// can rely on them and no package invents its own, and what each command's codes mean
// (the help and man pages are written from it).
package exitcode

// Codes of dump, doctor and the console's non-terminal table.
const (
	// OK: nothing to report.
	OK = 0
	// Failure: fewer than a quorum of masters reachable, or another runtime failure.
	Failure = 1
	// Usage: bad usage or config; also an admin action refused before anything was
	// sent (read-only, an audit log that cannot be written).
	Usage = 2
	// Findings: findings, anomalies, a capped scan or a master down.
	Findings = 3
)

// Codes of the admin subcommands (acquire, extend, release): OK done on every master,
// Findings done on a quorum only, Failure not done, Usage refused, and Unknown.
const (
	// Unknown: done on fewer than a quorum, but masters that did not reply could make
	// one (the command may still apply there): look before retrying.
	Unknown = 4
)

// Internal: a bug (a panic) stopped the console; the terminal was restored and the
// trace printed. 70 is EX_SOFTWARE of sysexits.h.
const Internal = 70

// Codes of run besides the command's own (0-255; a command killed by signal n gives
// 128+n, as shells report it).
const (
	// NotAcquired: the lock is held elsewhere, or fewer than a quorum answered; the
	// command was not started. It is Failure unless --conflict-exit-code says otherwise.
	NotAcquired = Failure
	// Lost: the lock was lost while the command ran; the command was stopped. 75 is
	// EX_TEMPFAIL of sysexits.h: the job may be retried.
	Lost = 75
	// CannotExecute: the command exists but could not be executed.
	CannotExecute = 126
	// NotFound: the command was not found.
	NotFound = 127
)
