package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func loadWith(t *testing.T, args ...string) (*globalFlags, string, error) {
	t.Helper()
	g := &globalFlags{}
	root := &cobra.Command{Use: "t"}
	g.register(root)
	if err := root.PersistentFlags().Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, pools, err := g.load()
	if err != nil {
		return g, "", err
	}
	if len(pools) != len(cfg.Masters) {
		t.Fatalf("%d pools for %d masters", len(pools), len(cfg.Masters))
	}
	names := make([]string, len(cfg.Masters))
	for i, m := range cfg.Masters {
		names[i] = m.Name
	}
	ro := ""
	if cfg.ReadOnly {
		ro = " ro"
	}
	return g, strings.Join(names, ",") + ro, nil
}

func TestConfigLookup(t *testing.T) {
	dir := t.TempDir()
	write := func(path, name string, readOnly bool) string {
		os.MkdirAll(filepath.Dir(path), 0o755)
		body := "read_only = " + map[bool]string{true: "true", false: "false"}[readOnly] + "\n[[masters]]\nname = \"" + name + "\"\naddr = \"127.0.0.1:1\"\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	explicit := write(filepath.Join(dir, "explicit.toml"), "explicit", false)
	env := write(filepath.Join(dir, "env.toml"), "env", true)
	write(filepath.Join(dir, "work", "config.toml"), "cwd", false)
	write(filepath.Join(dir, "xdg", "redlockctl", "config.toml"), "xdg", false)
	t.Chdir(filepath.Join(dir, "work"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("REDLOCKCTL_CONFIG", env)

	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--config", explicit}, "explicit"},
		{nil, "env ro"},
		{[]string{"--read-only", "--config", explicit}, "explicit ro"},
		{[]string{"--config", explicit, "--masters", "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"}, "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"},
	}
	for _, tt := range tests {
		if _, got, err := loadWith(t, tt.args...); err != nil || got != tt.want {
			t.Errorf("%v: %q %v, want %q", tt.args, got, err, tt.want)
		}
	}
	t.Setenv("REDLOCKCTL_CONFIG", "")
	if _, got, err := loadWith(t); err != nil || got != "cwd" {
		t.Errorf("./config.toml: %q %v", got, err)
	}
	if _, got, err := loadWith(t, "--masters", "127.0.0.1:7001"); err != nil || got != "127.0.0.1:7001" {
		t.Errorf("--masters without a file: %q %v", got, err)
	}
	os.Remove(filepath.Join(dir, "work", "config.toml"))
	if _, got, err := loadWith(t); err != nil || got != "xdg" {
		t.Errorf("$XDG_CONFIG_HOME: %q %v", got, err)
	}
	os.RemoveAll(filepath.Join(dir, "xdg"))
	if _, _, err := loadWith(t); err == nil || !strings.Contains(err.Error(), "no config") {
		t.Errorf("nothing to load: %v", err)
	}
	// A file with settings and no masters combines with --masters; without it, it is an error.
	noMasters := filepath.Join(dir, "settings.toml")
	os.WriteFile(noMasters, []byte("read_only = true\n[lock]\nrestart_guard = \"0s\"\nkey_prefix = \"lock:\"\n"), 0o600)
	if g, got, err := loadWith(t, "--config", noMasters, "--masters", "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"); err != nil || got != "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 ro" || len(g.warnings) != 0 {
		t.Errorf("file without masters + --masters: %q %v, warnings %v", got, err, g.warnings)
	}
	if _, _, err := loadWith(t, "--config", noMasters); err == nil || !strings.Contains(err.Error(), "no masters configured") {
		t.Errorf("file without masters alone: %v", err)
	}
	// Warnings are kept for the caller to print.
	write(filepath.Join(dir, "even.toml"), "a", false)
	os.WriteFile(filepath.Join(dir, "even.toml"), []byte("[[masters]]\naddr = \"127.0.0.1:1\"\n[[masters]]\naddr = \"127.0.0.1:2\"\n"), 0o600)
	if g, _, err := loadWith(t, "--config", filepath.Join(dir, "even.toml")); err != nil || len(g.warnings) != 1 {
		t.Errorf("even config: %v, warnings %v", err, g.warnings)
	}
}

// A config.toml found without --config is read as git trusts a repository: the user's
// (or root's) and not writable by others, whatever its group bits. A file skipped is
// named on stderr with the reason and the way to use it anyway; a file used is not
// warned about (the dump header and serve's start-up line name it).
func TestImplicitConfigTrusted(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("REDLOCKCTL_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
	if err := os.WriteFile("config.toml", []byte("[[masters]]\nname = \"here\"\naddr = \"127.0.0.1:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o600, 0o664, 0o660, 0o644} { // 0o664: a clone under umask 002
		os.Chmod("config.toml", mode)
		g, got, err := loadWith(t)
		if err != nil || got != "here" || len(g.warnings) != 0 {
			t.Errorf("own file, mode %v: %q %v, warnings %q", mode, got, err, g.warnings)
		}
	}
	os.Chmod("config.toml", 0o666)
	_, _, err := loadWith(t)
	const why = "skipped config.toml: writable by others (mode -rw-rw-rw-); pass --config config.toml to use it anyway"
	if err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("world-writable file: %v", err)
	}
	// Through the command: the reason reaches stderr.
	code, out, errOut := runOut("dump")
	if code != exitUsage || out != "" || !strings.Contains(errOut, why) {
		t.Errorf("dump with a world-writable ./config.toml: exit %d\n%s%s", code, out, errOut)
	}
	// A skipped file beside one that is used: the skip is a warning.
	xdg := filepath.Join(dir, "xdg")
	os.MkdirAll(filepath.Join(xdg, "redlockctl"), 0o755)
	os.WriteFile(filepath.Join(xdg, "redlockctl", "config.toml"), []byte("[[masters]]\nname = \"xdg\"\naddr = \"127.0.0.1:1\"\n"), 0o600)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	code, _, errOut = runOut("config", "check")
	if code != exitOK || !strings.Contains(errOut, "redlockctl: warning: "+why) {
		t.Errorf("config check, ./config.toml skipped for the XDG one: exit %d\n%s", code, errOut)
	}
	os.Chmod("config.toml", 0o600)
	if os.Geteuid() == 0 { // root can give the file away
		if err := os.Chown("config.toml", 65534, 65534); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
		_, _, err = loadWith(t)
		if err == nil || !strings.Contains(err.Error(), "skipped config.toml: owned by uid 65534, not by you or root") {
			t.Errorf("another user's file: %v", err)
		}
		if _, got, err := loadWith(t, "--config", "config.toml"); err != nil || got != "here" {
			t.Errorf("named with --config, it is read: %q %v", got, err)
		}
	}
}
