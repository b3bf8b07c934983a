package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/internal/exitcode"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

func runOut(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// The committed man pages and markdown reference are what `make docs` writes now.
func TestDocsUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := GenDocs(dir); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"man", "cli"} {
		want, _ := filepath.Glob(filepath.Join(dir, sub, "*"))
		got, _ := filepath.Glob(filepath.Join("..", "..", "..", "docs", sub, "*"))
		if len(want) < 12 || len(got) != len(want) {
			t.Fatalf("docs/%s has %d files, make docs writes %d: run make docs", sub, len(got), len(want))
		}
		for _, w := range want {
			a, _ := os.ReadFile(w)
			b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", sub, filepath.Base(w)))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("docs/%s/%s is stale or missing: run make docs", sub, filepath.Base(w))
			}
		}
	}
}

// --help goes to stdout with exit 0, for the root and every subcommand; a usage error
// goes to stderr with exit 2.
func TestHelpOnStdoutErrorsOnStderr(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"dump", "--help"}, {"release", "-h"}, {"help", "run"}, {"run", "--help"}} {
		code, out, errOut := runOut(args...)
		if code != exitOK || errOut != "" || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, code, len(out), errOut)
		}
	}
	for _, args := range [][]string{{"nosuch"}, {"dump", "--bogus"}, {"dump", "-o", "xml", "--masters", "127.0.0.1:1"}, {"release"}, {"version", "extra"}} {
		code, out, errOut := runOut(args...)
		if code != exitUsage || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing on stdout, a message on stderr", args, code, out, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	want := Version().String()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runOut(args...)
		if code != exitOK || strings.TrimSpace(out) != want || !strings.HasPrefix(want, "redlockctl ") || !strings.Contains(want, "go1.") {
			t.Errorf("%v: exit %d %q, want %q", args, code, out, want)
		}
	}
	version, revision = "v9.9.9", "0123abc"
	defer func() { version, revision = "", "" }()
	if got := Version(); got.Version != "v9.9.9" || got.Revision != "0123abc" {
		t.Errorf("a release version and revision set at build time: %+v", got)
	}
}

// Global flags work before and after the subcommand.
func TestGlobalFlagsEitherSide(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	if _, err := s.Do("SET", "job", "w:1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, args := range [][]string{
		{"--masters", s.Addr, "dump", "-o", "json"},
		{"--masters=" + s.Addr, "--read-only", "dump", "--output", "json"},
		{"dump", "-o", "json", "--masters", s.Addr},
	} {
		code, out, errOut := runOut(args...)
		if code == exitUsage || !strings.Contains(out, `"resource":"job"`) {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		outs = append(outs, out[strings.Index(out, `"masters"`):strings.Index(out, `"rtt_ms"`)])
	}
	if outs[0] != outs[1] || outs[1] != outs[2] {
		t.Errorf("the same masters differ by where the flag stands:\n%q", outs)
	}
}

// Shell completion scripts, and resource names completed from one poll.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, errOut := runOut("completion", sh)
		if code != exitOK || len(out) < 500 || !strings.Contains(out, "redlockctl") || errOut != "" {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", sh, code, len(out), errOut)
		}
	}
	ms := redistest.StartN(t, 3, redistest.Options{})
	for _, m := range ms {
		for _, k := range []string{"billing:nightly", "billing:weekly", "reports:daily"} {
			if _, err := m.Do("SET", k, "w:1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
				t.Fatal(err)
			}
		}
	}
	masters := strings.Join(redistest.Addrs(ms), ",")
	for _, sub := range []string{"acquire", "extend", "release", "run"} {
		code, out, errOut := runOut("__complete", sub, "--masters", masters, "bil")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != exitOK || !onlyDirective(errOut) || !slices.Equal(lines[:len(lines)-1], []string{"billing:nightly", "billing:weekly"}) || lines[len(lines)-1] != ":4" {
			t.Errorf("__complete %s bil: exit %d %q stderr %q", sub, code, out, errOut)
		}
	}
	// --value completes with the values the resource holds now (dump shows no value).
	if _, err := ms[1].Do("SET", "billing:weekly", "w:2#ffffffffffffffffffffffffffffffff", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"extend", "release"} {
		code, out, errOut := runOut("__complete", sub, "billing:weekly", "--masters", masters, "--value", "")
		if code != exitOK || !onlyDirective(errOut) || strings.TrimSpace(out) != "w:1#0123456789abcdef0123456789abcdef\nw:2#ffffffffffffffffffffffffffffffff\n:4" {
			t.Errorf("__complete %s --value: exit %d %q stderr %q", sub, code, out, errOut)
		}
	}
	// Nothing to complete past the resource, and nothing (no error) without masters.
	for _, args := range [][]string{{"__complete", "release", "--masters", masters, "job", ""}, {"__complete", "release", "--masters", "127.0.0.1:1", ""}} {
		code, out, errOut := runOut(args...)
		if code != exitOK || strings.TrimSpace(out) != ":4" || !onlyDirective(errOut) {
			t.Errorf("%v: exit %d %q stderr %q", args, code, out, errOut)
		}
	}
}

// onlyDirective reports whether a completion's stderr holds nothing but cobra's note of
// the directive (which the shell scripts drop): no error reaches the shell.
func onlyDirective(s string) bool {
	return strings.TrimSpace(s) == "Completion ended with directive: ShellCompDirectiveNoFileComp"
}

// config check prints the effective config, which loads back to the same config, with
// every secret redacted; a bad config is exit 2 naming file:line.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CHECK_TEST_PW", "s3cr3t-check-pw")
	path := filepath.Join(dir, "c.toml")
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte("s3cr3t-file-pw\n"), 0o600)
	body := "name = \"prod\"\n[inspect]\npoll_interval = \"2s\"\n[[masters]]\naddr = \"127.0.0.1:7001\"\npassword_env = \"CHECK_TEST_PW\"\n[[masters]]\naddr = \"redis://:url-pw-secret@127.0.0.1:7002/1\"\n[[masters]]\naddr = \"127.0.0.1:7003\"\npassword_file = " + strconv.Quote(pwFile) + "\n"
	os.WriteFile(path, []byte(body), 0o600)
	code, out, errOut := runOut("config", "check", "--config", path)
	if code != exitOK || strings.Contains(out+errOut, "s3cr3t") || strings.Contains(out+errOut, "url-pw") ||
		strings.Count(out, `password = "<redacted>"`) != 1 || !strings.Contains(out, `password_env = "CHECK_TEST_PW"`) || !strings.Contains(out, "password_file = "+strconv.Quote(pwFile)) ||
		!strings.Contains(out, `poll_interval = "2s"`) || !strings.Contains(out, "db = 1") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	eff := filepath.Join(dir, "effective.toml")
	os.WriteFile(eff, []byte(out), 0o600)
	if code, _, errOut := runOut("config", "check", "--config", eff); code != exitOK {
		t.Errorf("the effective config does not load back: %s", errOut)
	}
	os.WriteFile(path, []byte("[inspect]\npoll_interval = 5\n"), 0o600)
	code, out, errOut = runOut("config", "check", "--config", path)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "c.toml:2: inspect.poll_interval: got a whole number") {
		t.Errorf("bad config: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runOut("config", "show"); code != exitUsage {
		t.Errorf("config show: exit %d", code)
	}
}

// One help system: every command's flags are cobra's. An unknown flag or a bad value
// gets pflag's error and the usage --help shows, exit 2; every command's help ends with
// its exit codes, as package exitcode lists them.
func TestOneHelpSystem(t *testing.T) {
	for _, tc := range []struct {
		args, help []string
		want       string
	}{
		{[]string{"dump", "--bogus"}, []string{"dump"}, "redlockctl dump: unknown flag: --bogus\nUsage:\n  redlockctl dump [flags]"},
		{[]string{"acquire", "job", "--ttl", "5"}, []string{"acquire"}, `redlockctl acquire: invalid argument "5" for "--ttl" flag: time: missing unit in duration "5"` + "\nUsage:\n  redlockctl acquire RESOURCE [flags]"},
		{[]string{"events", "-x"}, []string{"events"}, "redlockctl events: unknown shorthand flag: 'x' in -x\nUsage:"},
		{[]string{"--restart-guard", "-1s", "dump"}, []string{"dump"}, `redlockctl dump: invalid argument "-1s" for "--restart-guard" flag: must not be negative`},
		{[]string{"config", "check", "extra"}, []string{"config", "check"}, `redlockctl config check: unexpected argument "extra"`},
		{[]string{"nosuch"}, nil, `redlockctl: unknown command "nosuch" for "redlockctl"`},
	} {
		code, out, errOut := runOut(tc.args...)
		_, help, _ := runOut(append(tc.help, "--help")...)
		_, usage, _ := strings.Cut(help, "Usage:")
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || len(usage) < 200 || !strings.HasSuffix(errOut, usage) {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant %q and the usage of --help", tc.args, code, out, errOut, tc.want)
		}
		if strings.Contains(errOut, "flag provided but not defined") || strings.Contains(errOut, "  -output") {
			t.Errorf("%v: the standard library's flag package answered:\n%s", tc.args, errOut)
		}
	}
	for _, cmd := range [][]string{nil, {"console"}, {"dump"}, {"doctor"}, {"events"}, {"acquire"}, {"extend"}, {"release"}, {"run"}, {"serve"}, {"config", "check"}, {"demo"}, {"version"}} {
		code, out, _ := runOut(append(cmd, "--help")...)
		var want strings.Builder
		want.WriteString("Exit status:\n")
		for _, ec := range exitcode.Of(strings.Join(cmd, " ")) {
			want.WriteString("  " + ec.Label())
		}
		var got strings.Builder
		_, tail, ok := strings.Cut(out, "\nExit status:\n")
		got.WriteString("Exit status:\n")
		for _, line := range strings.Split(strings.TrimSuffix(tail, "\n"), "\n") {
			f := strings.Fields(line)
			if len(f) > 0 {
				got.WriteString("  " + f[0])
			}
		}
		if code != exitOK || !ok || got.String() != want.String() {
			t.Errorf("%v --help: exit %d; exit codes %q, want %q\n%s", cmd, code, got.String(), want.String(), out)
		}
	}
	if _, out, _ := runOut("run", "--help"); !strings.Contains(out, "  75   the lock was lost while the command ran") || !strings.Contains(out, "  CMD  the command's own exit code") {
		t.Errorf("run --help does not say its own codes:\n%s", out)
	}
}

// Flag values complete: -o from each command's formats, --config with TOML files.
func TestFlagValueCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "dump", "-o", ""}, "table\njson\nndjson\nprometheus\n:4"},
		{[]string{"__complete", "doctor", "--output", ""}, "table\njson\nndjson\n:4"},
		{[]string{"__complete", "events", "-o", ""}, "table\njson\nndjson\n:4"},
		{[]string{"__complete", "release", "x", "-o", ""}, "table\njson\n:4"},
		{[]string{"__complete", "serve", "-o", ""}, "rules\nprometheusrule\njson\nconfigmap\n:4"},
		{[]string{"__complete", "dump", "--config", ""}, "toml\n:8"},
		{[]string{"__complete", "--config", ""}, "toml\n:8"},
	} {
		code, out, _ := runOut(tc.args...)
		if code != exitOK || strings.TrimSpace(out) != tc.want {
			t.Errorf("%v: exit %d\n%s\nwant\n%s", tc.args, code, out, tc.want)
		}
	}
}
