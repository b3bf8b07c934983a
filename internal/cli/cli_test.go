package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadWith(t *testing.T, args ...string) (*globalFlags, string, error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := addGlobalFlags(fs)
	if err := fs.Parse(args); err != nil {
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

// A config.toml found without --config is read only when it is the user's and no one
// else may write it; which file was used, or why one was skipped, is said.
func TestImplicitConfigTrusted(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("REDLOCKCTL_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
	if err := os.WriteFile("config.toml", []byte("[[masters]]\nname = \"here\"\naddr = \"127.0.0.1:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, got, err := loadWith(t)
	if err != nil || got != "here" || !strings.Contains(strings.Join(g.warnings, "\n"), "using config.toml, found without --config") {
		t.Fatalf("own file: %q %v %v", got, err, g.warnings)
	}
	os.Chmod("config.toml", 0o666)
	g, _, err = loadWith(t)
	if err == nil || !strings.Contains(strings.Join(g.notes, "\n"), "skipped config.toml: writable by group or others") {
		t.Errorf("world-writable file: %v %v", err, g.notes)
	}
	os.Chmod("config.toml", 0o600)
	if os.Geteuid() == 0 { // root can give the file away
		if err := os.Chown("config.toml", 65534, 65534); err != nil {
			t.Fatal(err)
		}
		g, _, err = loadWith(t)
		if err == nil || !strings.Contains(strings.Join(g.notes, "\n"), "skipped config.toml: owned by uid 65534, not by you") {
			t.Errorf("another user's file: %v %v", err, g.notes)
		}
		if _, got, err := loadWith(t, "--config", "config.toml"); err != nil || got != "here" {
			t.Errorf("named with --config, it is read: %q %v", got, err)
		}
	}
}
