// Package cli is redlockctl's command line: the cobra command tree, one file per
// subcommand, each parsing its own flags, loading the config and handing the work to
// inspect (reads), admin (writes) or ui (the console). It holds no lock logic of its
// own, writes to servers only through admin, and returns the exit codes of package
// exitcode.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/internal/exitcode"
)

// Exit codes, as package exitcode defines them.
const (
	exitOK       = exitcode.OK
	exitFailure  = exitcode.Failure
	exitUsage    = exitcode.Usage
	exitFindings = exitcode.Findings
	exitInternal = exitcode.Internal
)

// runFunc is a subcommand: it parses its own args and returns an exit code.
type runFunc func(args []string, stdout, stderr io.Writer) int

// subcommand describes one subcommand of the tree.
type subcommand struct {
	name, args, short, long, example string
	run                              runFunc
	resources                        bool // its first argument is a resource name (completed from a poll)
}

var subcommands = []subcommand{
	{name: "console", short: "Open the interactive console (the default on a terminal)",
		long:    "Open the interactive console on the masters. When stdout is not a terminal, print the dump table instead.",
		example: "  redlockctl console --config /etc/redlockctl/config.toml\n  redlockctl --masters 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 --read-only",
		run:     runConsole},
	{name: "dump", short: "Print every lock on every master (table, json, ndjson, prometheus)",
		long:    "Poll every master once (or every --watch), judge each lock across them and print it.\n\nExit: 0 nothing to report, 3 findings/anomalies/a master down/incomplete, 1 fewer than a quorum reachable, 2 bad usage or config.",
		example: "  redlockctl dump -o json\n  redlockctl dump --filter 'billing:*' --only anomalies\n  redlockctl dump --watch 5s -o ndjson",
		run:     runDump},
	{name: "doctor", short: "Check the masters' setup and clocks",
		long:    "Sample the masters for --duration (clock rates need several samples), then print every finding with its fix.\n\nExit codes as dump.",
		example: "  redlockctl doctor\n  redlockctl doctor --duration 10s -o json",
		run:     runDoctor},
	{name: "events", short: "Stream every lock acquisition, release and expiry as it happens",
		long:    "Follow every master live (CLIENT TRACKING; never a write) and print one line per lock lifecycle event: acquired, extended, released, expired, contended, and gap/resync where the feed could not see. One lifecycle is one acquired and one end event, however many masters hold the lock.\n\nSIGINT and SIGTERM end it with exit 0.",
		example: "  redlockctl events\n  redlockctl events -o ndjson --filter 'billing:* state:expired' >> /var/log/redlockctl/events.ndjson",
		run:     runEvents},
	{name: "acquire", args: "RESOURCE", short: "Acquire a lock through the redlock library",
		example:   "  redlockctl acquire billing:nightly --ttl 5m --owner ops@host\n  redlockctl acquire billing:nightly --ttl 30s --hold",
		run:       runAcquire,
		resources: true},
	{name: "extend", args: "RESOURCE", short: "Extend a lock where it still holds the given value",
		example:   "  redlockctl extend billing:nightly --value 'worker-7@host#9d6f...' --ttl 5m",
		run:       runExtend,
		resources: true},
	{name: "release", args: "RESOURCE", short: "Release a lock (owner-checked, or --force after showing the plan)",
		example:   "  redlockctl release billing:nightly --value 'worker-7@host#9d6f...'\n  redlockctl release billing:nightly --force",
		run:       runRelease,
		resources: true},
	{name: "run", args: "RESOURCE -- CMD [ARG...]", short: "Run a command only while a lock is held",
		example:   "  redlockctl run billing:nightly --ttl 30s -- ./nightly.sh --full",
		run:       runRun,
		resources: true},
	{name: "serve", short: "Serve lock state as Prometheus metrics (/metrics, /healthz)",
		example: "  redlockctl serve --listen :7335\n  redlockctl serve --print-alerts > redlockctl-alerts.yml",
		run:     runServe},
	{name: "config", args: "check", short: "Check the config and print it as it takes effect (secrets redacted)",
		long:    "Load the config exactly as every command does, and print the effective config with every default filled in and every secret shown as <redacted>.\n\nExit: 0 valid, 2 not (the error names file:line and the key).",
		example: "  redlockctl config check --config /etc/redlockctl/config.toml",
		run:     runConfigCheck},
	{name: "demo", short: "Open the console on embedded demo masters (nothing to install)",
		example: "  redlockctl demo\n  redlockctl demo --no-ui --duration 10s",
		run:     runDemo},
}

// Run runs redlockctl with args (without the program name) and returns its exit code.
// It writes only to stdout and stderr and never exits the process.
func Run(args []string, stdout, stderr io.Writer) int { return run(args, stdout, stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	args = hoistGlobals(args)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !slices.Contains([]string{"-h", "--help", "--version"}, args[0]) {
		// No subcommand: the console on a terminal, the dump table otherwise.
		return runDefault(args, stdout, stderr)
	}
	code := exitOK
	root := newRoot(stdout, stderr, &code)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(stderr, "redlockctl: %v\nRun 'redlockctl --help' for the commands.\n", err)
		return exitUsage
	}
	return code
}

// globalFlags lists the flags every subcommand that talks to masters takes, with
// whether each takes a value; hoistGlobals moves them after the subcommand's name.
var globalFlagNames = map[string]bool{"--config": true, "--masters": true, "--read-only": false, "--no-audit": false}

// hoistGlobals turns `--config F dump ...` into `dump --config F ...`: global flags may
// come before or after the subcommand, as in kubectl.
func hoistGlobals(args []string) []string {
	var globals []string
	i := 0
	for i < len(args) {
		name, _, hasValue := strings.Cut(args[i], "=")
		takesValue, ok := globalFlagNames[name]
		if !ok {
			break
		}
		globals = append(globals, args[i])
		i++
		if takesValue && !hasValue && i < len(args) {
			globals = append(globals, args[i])
			i++
		}
	}
	if len(globals) == 0 || i >= len(args) || !isSubcommand(args[i]) {
		return args
	}
	return append(append([]string{args[i]}, globals...), args[i+1:]...)
}

func isSubcommand(name string) bool {
	for _, s := range subcommands {
		if s.name == name {
			return true
		}
	}
	return false
}

// newRoot builds the command tree; each subcommand parses its own flags (the flag sets
// are also given to cobra, for help, completion and the generated docs) and stores its
// exit code in *code.
func newRoot(stdout, stderr io.Writer, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:   "redlockctl",
		Short: "Inspect and administer Redlock locks held across N Redis masters",
		Long: "redlockctl shows every lock on every master, live: its value and library, its holder, its PTTL on each\n" +
			"master and whether a quorum agrees, how much validity is really left, and each master's clock. From the\n" +
			"same screen, or a script, it acquires, extends or force-releases a lock through the redlock library.\n\n" +
			"Without a subcommand it opens the console on a terminal, and prints the dump table otherwise.",
		Version:           Version().String(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		Args:              cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			*code = runDefault(args, stdout, stderr)
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().AddGoFlagSet(globalFlagSet())
	for _, sc := range subcommands {
		root.AddCommand(newSubcommand(sc, stdout, stderr, code))
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and Go version of this build",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintln(stdout, Version().String())
		},
	})
	return root
}

// newSubcommand wraps one subcommand: its flags go to cobra for help, completion and
// docs; parsing stays with the subcommand (flags may follow positional arguments, and
// everything after `--` is left alone).
func newSubcommand(sc subcommand, stdout, stderr io.Writer, code *int) *cobra.Command {
	use := sc.name
	if sc.args != "" {
		use += " " + sc.args
	}
	c := &cobra.Command{
		Use:                use,
		Short:              sc.short,
		Long:               sc.long,
		Example:            sc.example,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if wantsHelp(args) {
				cmd.SetOut(stdout)
				return cmd.Help()
			}
			*code = sc.run(args, stdout, stderr)
			return nil
		},
	}
	if c.Long == "" {
		c.Long = sc.short + "."
	}
	fs := flagsOf(sc.run)
	fs.VisitAll(func(f *flag.Flag) {
		if _, global := globalFlagNames["--"+f.Name]; !global && f.Name != "o" {
			c.Flags().AddGoFlag(f)
		}
	})
	if out := c.Flags().Lookup("output"); out != nil {
		out.Shorthand = "o" // -o is --output (both parse)
	}
	if sc.resources {
		c.ValidArgsFunction = completeResources
	}
	return c
}

// wantsHelp reports whether args ask for help before any `--`.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help", "-help":
			return true
		}
	}
	return false
}

// globalFlagSet is the flag set of the global flags alone (for cobra's help and docs).
func globalFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("redlockctl", flag.ContinueOnError)
	addGlobalFlags(fs)
	return fs
}

// flagCapture is the stderr flagsOf hands a subcommand: newFlags records the flag set
// it makes there, and everything written to it is dropped.
type flagCapture struct{ fs *flag.FlagSet }

func (*flagCapture) Write(p []byte) (int, error) { return len(p), nil }

// newFlags returns a subcommand's flag set, writing its errors to stderr; flagsOf
// captures it.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if c, ok := stderr.(*flagCapture); ok {
		c.fs = fs
	}
	return fs
}

// flagsOf returns the flags run defines, by running it with -h (it parses its flags
// before doing anything else, and -h makes it return at once).
func flagsOf(run runFunc) *flag.FlagSet {
	c := &flagCapture{}
	run([]string{"-h"}, io.Discard, c)
	if c.fs == nil {
		panic(errors.New("cli: a subcommand did not create its flags with newFlags"))
	}
	return c.fs
}
