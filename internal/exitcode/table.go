package exitcode

import "strconv"

// Code is one exit code and what it means for the command that returns it.
type Code struct {
	Code    int
	Meaning string
}

// Of returns the exit codes of the redlockctl command named by its path below the root
// ("dump", "config check"; "" for redlockctl alone), in the order a reader looks for
// them. The help of every command and the man pages' EXIT STATUS sections are written
// from it. A command that is not listed returns OK and Usage only.
func Of(command string) []Code {
	usage := Code{Usage, "bad usage or config"}
	switch command {
	case "", "console", "dump", "doctor":
		codes := []Code{
			{OK, "nothing to report"},
			{Findings, "findings, anomalies, a capped scan or a master down"},
			{Failure, "fewer than a quorum of masters reachable, or output that could not be written"},
			usage,
		}
		switch command {
		case "doctor":
			codes[1].Meaning = "findings (a master down, a clock or setup problem)"
		case "", "console":
			codes[0].Meaning = "the console was quit, or (not on a terminal) nothing to report in the dump table"
			codes = append(codes, Code{Internal, "a bug stopped the console (the terminal was restored and the trace printed)"})
		}
		return codes
	case "events":
		return []Code{{OK, "ended by SIGINT, SIGTERM or --duration"}, {Failure, "output that could not be written"}, usage}
	case "acquire", "extend", "release":
		return []Code{
			{OK, "done on every master"},
			{Findings, "done on a quorum of masters only"},
			{Failure, "not done (fewer than a quorum; what was done is undone or said, per master)"},
			{Unknown, "not done on a quorum, but masters that did not reply could make one: look before retrying"},
			{Usage, "bad usage or config, or refused before anything was sent (read-only, an audit log that cannot be written)"},
		}
	case "run":
		return []Code{
			{-1, "the command's own exit code (128+n when signal n ended it)"},
			{NotAcquired, "the lock is held elsewhere, or fewer than a quorum answered: the command was not started (see --conflict-exit-code)"},
			{Usage, "bad usage or config, or read-only"},
			{Lost, "the lock was lost while the command ran: the command was stopped"},
			{CannotExecute, "the command could not be executed"},
			{NotFound, "the command was not found"},
		}
	case "serve":
		return []Code{{OK, "stopped by SIGINT or SIGTERM, or a --print flag printed its file"}, {Failure, "the server failed while running"}, {Usage, "bad usage or config, or an address it cannot listen on"}}
	case "config check":
		return []Code{{OK, "the config is valid"}, {Usage, "it is not (the error names file:line and the key)"}}
	case "demo":
		return []Code{{OK, "stopped"}, {Failure, "the demo masters could not start"}, {Usage, "bad usage"}, {Internal, "a bug stopped the console"}}
	}
	return []Code{{OK, "done"}, {Usage, "bad usage"}}
}

// Label is how a code is written in a list: its number, or "CMD" for a command's own.
func (c Code) Label() string {
	if c.Code < 0 {
		return "CMD"
	}
	return strconv.Itoa(c.Code)
}
