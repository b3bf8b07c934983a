// Package cli is redlockctl's command line: the cobra command tree, one file per
// subcommand, each declaring its flags on its cobra command (an options struct and a
// run function, as cli/cli does), loading the config and handing the work to inspect
// (reads), admin (writes) or ui (the console). It holds no lock logic of its own,
// writes to servers only through admin, and returns the exit codes of package
// exitcode.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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

// env is what every command runs with: the global flags, the output streams, and
// where it leaves its exit code.
type env struct {
	g              *globalFlags
	stdout, stderr io.Writer
	code           *int
}

// do returns a cobra RunE that runs f and keeps its exit code.
func (e *env) do(f func(args []string) int) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		*e.code = f(args)
		return nil
	}
}

// Run runs redlockctl with args (without the program name) and returns its exit code.
// It writes only to stdout and stderr and never exits the process.
func Run(args []string, stdout, stderr io.Writer) int { return run(args, stdout, stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	code := exitOK
	root := newRoot(stdout, stderr, &code)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err != nil {
		// A usage error (a flag cobra or pflag refused, a wrong number of arguments,
		// an unknown command): the error, then the usage --help shows.
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		fmt.Fprint(stderr, cmd.UsageString())
		return exitUsage
	}
	return code
}

// usageTemplate is cobra's usage, then the command's exit codes (from package
// exitcode).
var usageTemplate = (&cobra.Command{}).UsageTemplate() + `{{with exitStatus .}}
Exit status:
{{.}}{{end}}`

func init() {
	cobra.AddTemplateFunc("exitStatus", func(c *cobra.Command) string { return exitStatus(c, "  ") })
}

// commandName is c's path below the root ("dump", "config check"; "" for the root).
func commandName(c *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), c.Root().Name()), " ")
}

// exitStatus lists c's exit codes, one a line, each line indented by indent.
func exitStatus(c *cobra.Command, indent string) string {
	if c.Name() == "help" || c.HasParent() && c.Parent().Name() == "completion" || c.Name() == "completion" {
		return ""
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, ec := range exitcode.Of(commandName(c)) {
		fmt.Fprintf(tw, "%s%s\t%s\n", indent, ec.Label(), ec.Meaning)
	}
	tw.Flush()
	return b.String()
}

// newRoot builds the command tree: each command's flags are declared on it, and each
// stores its exit code in *code.
func newRoot(stdout, stderr io.Writer, code *int) *cobra.Command {
	e := &env{g: &globalFlags{}, stdout: stdout, stderr: stderr, code: code}
	console := &consoleOptions{}
	root := &cobra.Command{
		Use:   "redlockctl",
		Short: "Inspect and administer Redlock locks held across N Redis masters",
		Long: "redlockctl shows every lock on every master, live: its value and library, its holder, its PTTL on each\n" +
			"master and whether a quorum agrees, how much validity is really left, and each master's clock. From the\n" +
			"same screen, or a script, it acquires, extends or force-releases a lock through the redlock library.\n\n" +
			"Without a subcommand it opens the console on a terminal, and prints the dump table otherwise.",
		Example:           "  redlockctl demo\n  redlockctl --masters 10.0.0.1,10.0.0.2,10.0.0.3 dump\n  redlockctl --config /etc/redlockctl/config.toml",
		Version:           Version().String(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		Args:              cobra.NoArgs,
		RunE:              e.do(func([]string) int { return runConsole("", e, console) }),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetUsageTemplate(usageTemplate)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	e.g.register(root)
	console.register(root)
	root.AddCommand(
		newConsoleCmd(e),
		newDumpCmd(e),
		newDoctorCmd(e),
		newEventsCmd(e),
		newAcquireCmd(e),
		newExtendCmd(e),
		newReleaseCmd(e),
		newRunCmd(e),
		newServeCmd(e),
		newConfigCmd(e),
		newDemoCmd(e),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version, VCS revision and Go version of this build",
			Args:  noArgs,
			Run: func(cmd *cobra.Command, args []string) {
				fmt.Fprintln(stdout, Version().String())
			},
		},
	)
	return root
}

// resourceArgs is the Args of a command that takes one RESOURCE.
func resourceArgs(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return errors.New("missing RESOURCE")
	case len(args) > 1:
		return fmt.Errorf("one RESOURCE expected, got %d: %s", len(args), strings.Join(args, " "))
	case args[0] == "":
		return errors.New("empty RESOURCE")
	}
	return nil
}

// noArgs is the Args of a command that takes no argument.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}
