package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/exitcode"
)

// docsDate is the date the generated man pages carry: fixed, so that regenerating them
// changes nothing until a command does.
var docsDate = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)

// GenDocs writes the man pages into dir/man (section 1, one per command, with EXIT
// STATUS, ENVIRONMENT and FILES; and redlockctl-config(5), the config file) and a
// markdown reference into dir/cli, one file per command, from the same command tree
// the binary runs and the config package's table of keys.
func GenDocs(dir string) error {
	code := 0
	root := newRoot(io.Discard, io.Discard, &code)
	root.InitDefaultCompletionCmd()
	// Defaults that depend on the machine are written as the variable they come from.
	tmp := os.TempDir()
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return
		}
		all = append(all, c)
		c.Flags().VisitAll(func(f *pflag.Flag) {
			f.DefValue = strings.Replace(f.DefValue, tmp, "$TMPDIR", 1)
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	man, md := filepath.Join(dir, "man"), filepath.Join(dir, "cli")
	for _, d := range []string{man, md} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	header := &doc.GenManHeader{Title: "REDLOCKCTL", Section: "1", Date: &docsDate, Source: "redlockctl", Manual: "redlockctl manual"}
	for _, c := range all {
		base := strings.ReplaceAll(c.CommandPath(), " ", "-")
		var b bytes.Buffer
		h := *header
		if err := doc.GenMan(c, &h, &b); err != nil {
			return err
		}
		page := insertBefore(b.String(), ".SH SEE ALSO", manSections(c))
		if c == root {
			page = strings.Replace(page, "\\fBredlockctl-completion(1)\\fP", "\\fBredlockctl-completion(1)\\fP, \\fBredlockctl-config(5)\\fP", 1)
		}
		if err := os.WriteFile(filepath.Join(man, base+".1"), []byte(page), 0o644); err != nil {
			return err
		}
		b.Reset()
		if err := doc.GenMarkdown(c, &b); err != nil {
			return err
		}
		if codes := exitStatus(c, ""); codes != "" {
			b = *bytes.NewBufferString(insertBefore(b.String(), "### SEE ALSO", "### Exit status\n\n```\n"+codes+"```\n\n"))
		}
		if err := os.WriteFile(filepath.Join(md, strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(man, "redlockctl-config.5"), []byte(configManPage()), 0o644)
}

// insertBefore inserts add into s before the line that starts with mark (at the end
// when there is none).
func insertBefore(s, mark, add string) string {
	if i := strings.Index(s, "\n"+mark); i >= 0 {
		return s[:i+1] + add + s[i+1:]
	}
	return s + add
}

// manSections are the EXIT STATUS, ENVIRONMENT and FILES sections of c's man page.
func manSections(c *cobra.Command) string {
	var b strings.Builder
	if codes := exitcode.Of(commandName(c)); exitStatus(c, "") != "" {
		b.WriteString(".SH EXIT STATUS\n")
		for _, ec := range codes {
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", ec.Label(), manEscape(ec.Meaning))
		}
		b.WriteString("\n")
	}
	if c.Name() == "version" || c.Name() == "help" || c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion" {
		return b.String()
	}
	b.WriteString(`.SH ENVIRONMENT
.TP
\fBREDLOCKCTL_CONFIG\fP
the config file, when \fB--config\fP is not given
.TP
\fBXDG_CONFIG_HOME\fP
where \fIredlockctl/config.toml\fP is looked for (default \fI~/.config\fP)
.TP
\fBXDG_STATE_HOME\fP
where the default audit log \fIredlockctl/audit.log\fP is kept (default \fI~/.local/state\fP)
.TP
\fBNO_COLOR\fP
the console shows no colours
.PP
A master's \fBpassword_env\fP names another variable, which holds its password.

.SH FILES
.TP
\fI./config.toml\fP, \fI$XDG_CONFIG_HOME/redlockctl/config.toml\fP
the config (see \fBredlockctl-config(5)\fP), looked for in this order when neither \fB--config\fP, \fB$REDLOCKCTL_CONFIG\fP nor \fB--masters\fP is given. A file found this way is read only when it belongs to you or root and others may not write it; a file skipped is named on stderr with the reason, and \fB--config\fP \fIFILE\fP reads it anyway.
.TP
\fI$XDG_STATE_HOME/redlockctl/audit.log\fP
the default audit log of admin actions (\fBaudit_log\fP in the config; \fB--no-audit\fP for none)

`)
	return b.String()
}

// manEscape escapes text for a man page line.
func manEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return strings.ReplaceAll(s, "-", `\-`)
}

// configManPage is redlockctl-config(5): every key of the config file, table by table,
// from config.Keys.
func configManPage() string {
	var b strings.Builder
	fmt.Fprintf(&b, `.nh
.TH "REDLOCKCTL-CONFIG" "5" "%s" "redlockctl" "redlockctl manual"

.SH NAME
redlockctl-config - the redlockctl config file

.SH SYNOPSIS
\fIconfig.toml\fP: TOML. Every key is optional but the masters (or \fB--masters\fP on the command line).

.SH DESCRIPTION
The config names the Redis masters redlockctl inspects and administers, and the options of the redlock client and of the inspector. A key that is not listed here, a value of the wrong type, or a bad duration is an error that names the file, the line and the key. \fBredlockctl config check\fP loads the config as every command does and prints it as it takes effect.
.PP
Durations are text such as "500ms", "30s" or "5m".
`, docsDate.Format("Jan 2006"))
	titles := map[string]string{
		"":               "TOP-LEVEL KEYS",
		"lock":           "[lock]: THE REDLOCK CLIENT",
		"inspect":        "[inspect]: THE INSPECTOR",
		"inspect.scopes": "[[inspect.scopes]]: SCOPE OVERRIDES, ONE TABLE EACH",
		"masters":        "[[masters]]: ONE TABLE PER MASTER",
	}
	table := "-"
	for _, k := range config.Keys() {
		if k.Table != table {
			table = k.Table
			fmt.Fprintf(&b, "\n.SH %s\n", titles[table])
		}
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fP (%s", k.Name, k.Type)
		if k.Default != "" {
			fmt.Fprintf(&b, "; default %s", manEscape(k.Default))
		}
		fmt.Fprintf(&b, ")\n%s\n", manEscape(k.Doc))
	}
	b.WriteString(`
.SH EXAMPLE
.EX
name = "prod"

[lock]
default_ttl = "30s"

[[masters]]
addr = "10.0.0.1:6379"
password_env = "REDIS_PASSWORD"

[[masters]]
addr = "10.0.0.2:6379"
password_env = "REDIS_PASSWORD"

[[masters]]
addr = "10.0.0.3:6379"
password_env = "REDIS_PASSWORD"
.EE

.SH SEE ALSO
\fBredlockctl(1)\fP, \fBredlockctl-config-check(1)\fP
`)
	return b.String()
}
