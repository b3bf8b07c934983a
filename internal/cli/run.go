// Package cli is redlockctl's command line: one function per subcommand, each parsing
// its own flags, loading the config and handing the work to inspect (reads), admin
// (writes) or ui (the console). It holds no lock logic of its own and defines the exit
// codes every subcommand returns.
package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes shared by every subcommand (see DESIGN.md, "Output contracts").
const (
	exitOK       = 0 // nothing to report / done on every reachable master
	exitFailure  = 1 // runtime failure, fewer than a quorum reachable, not done
	exitUsage    = 2 // bad usage or config
	exitFindings = 3 // findings, anomalies or a master down / done on a quorum only
)

// command is one subcommand: it parses its own args and returns an exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"console": {"open the interactive console (default on a terminal)", runConsole},
	"dump":    {"print every lock on every master (table, json, ndjson)", runDump},
	"doctor":  {"check the masters' setup and clocks", runDoctor},
	"acquire": {"acquire a lock through the redlock library", runAcquire},
	"extend":  {"extend a lock's observed value", runExtend},
	"release": {"release a lock (owner-checked, or --force)", runRelease},
	"run":     {"run a command only while a lock is held", runRun},
	"demo":    {"open the console on embedded demo masters", runDemo},
	"serve":   {"serve lock state as Prometheus metrics (/metrics)", runServe},
}

// Run runs redlockctl with args (without the program name) and returns its exit code.
func Run(args []string, stdout, stderr io.Writer) int { return run(args, stdout, stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		// No subcommand: the console on a terminal, the dump table otherwise.
		return runDefault(args, stdout, stderr)
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		usage(stdout)
		return exitOK
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "redlockctl: unknown command %q\n\n", name)
		usage(stderr)
		return exitUsage
	}
	return cmd.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: redlockctl [command] [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'redlockctl COMMAND -h' for a command's flags.")
}
