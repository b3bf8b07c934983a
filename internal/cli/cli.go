package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockctl/redlockctl/internal/config"
)

// globalFlags are the flags every subcommand that talks to masters accepts.
type globalFlags struct {
	config   string
	masters  string
	readOnly bool
	noAudit  bool
	warnings []string // config warnings from the last load
	notes    []string // which file was found, or skipped and why
}

// addGlobalFlags registers --config, --masters and --read-only on fs.
func addGlobalFlags(fs *flag.FlagSet) *globalFlags {
	g := &globalFlags{}
	fs.StringVar(&g.config, "config", "", "config file (default: $REDLOCKCTL_CONFIG, ./config.toml, $XDG_CONFIG_HOME/redlockctl/config.toml)")
	fs.StringVar(&g.masters, "masters", "", "comma-separated master addresses host:port (no config file needed)")
	fs.BoolVar(&g.readOnly, "read-only", false, "send no write command (admin actions are refused)")
	fs.BoolVar(&g.noAudit, "no-audit", false, "write no audit log line for admin actions (the default log: audit_log, or ~/.local/state/redlockctl/audit.log)")
	return g
}

// errNoConfig says that no config file was found and no --masters given.
var errNoConfig = errors.New("no config: pass --config FILE or --masters host:port,..., set $REDLOCKCTL_CONFIG, or create ./config.toml")

// configPath finds the config file: --config, $REDLOCKCTL_CONFIG, ./config.toml,
// $XDG_CONFIG_HOME/redlockctl/config.toml (or ~/.config when XDG_CONFIG_HOME is unset).
// A file found rather than named is read only when it belongs to the user (or root) and
// others may not write it, whatever its group bits (as git trusts a repository: a clone
// made under umask 002 is group-writable): a config.toml planted in a shared directory
// could otherwise send the user's passwords to a server of its choosing. Each file
// skipped, and why, is noted in g.notes (and in the error when no file is left).
func (g *globalFlags) configPath() (string, error) {
	if g.config != "" {
		return g.config, nil
	}
	if p := os.Getenv("REDLOCKCTL_CONFIG"); p != "" {
		return p, nil
	}
	if g.masters != "" {
		return "", nil
	}
	candidates := []string{"config.toml"}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		if home, err := os.UserHomeDir(); err == nil {
			xdg = filepath.Join(home, ".config")
		}
	}
	if xdg != "" {
		candidates = append(candidates, filepath.Join(xdg, "redlockctl", "config.toml"))
	}
	for _, p := range candidates {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if why := untrusted(fi); why != "" {
			g.notes = append(g.notes, fmt.Sprintf("skipped %s: %s; pass --config %s to use it anyway", p, why, p))
			continue
		}
		return p, nil
	}
	if len(g.notes) > 0 {
		return "", fmt.Errorf("%w\n%s", errNoConfig, strings.Join(g.notes, "\n"))
	}
	return "", errNoConfig
}

// load reads the config (or --masters), applies --read-only and builds the pools.
// Every error it returns is a usage error (exit 2). Warnings are kept in g.warnings.
func (g *globalFlags) load() (*config.Config, []*redis.Pool, error) {
	path, err := g.configPath()
	if err != nil {
		return nil, nil, err
	}
	var cfg *config.Config
	var warns []string
	switch {
	case path == "":
		cfg, warns, err = config.FromAddrs(strings.Split(g.masters, ","))
	default:
		if g.masters != "" {
			cfg, warns, err = config.LoadWithMasters(path, strings.Split(g.masters, ","))
		} else {
			cfg, warns, err = config.Load(path)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	g.warnings = append(g.notes, warns...)
	cfg.ReadOnly = cfg.ReadOnly || g.readOnly
	if g.noAudit {
		cfg.AuditLog, cfg.AuditLogDefault = "", false
	}
	pools, err := cfg.Pools()
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	return cfg, pools, nil
}

// parseNoArgs parses fs for a command that takes no positional argument. When ok is
// false the command ends with code: 0 after -h, 2 on bad usage (the flag package or
// this function has said why on stderr).
func parseNoArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", strings.TrimSpace("redlockctl "+fs.Name()), fs.Arg(0))
		return exitUsage, false
	}
	return exitOK, true
}

// closePools closes every pool.
func closePools(pools []*redis.Pool) {
	for _, p := range pools {
		p.Close()
	}
}

// outputFlag registers -o and its long form --output on fs, one value.
func outputFlag(fs *flag.FlagSet, def, usage string) *string {
	p := new(string)
	outputFlagVar(fs, p, def, usage)
	return p
}

// outputFlagVar is outputFlag into p.
func outputFlagVar(fs *flag.FlagSet, p *string, def, usage string) {
	fs.StringVar(p, "output", def, usage)
	fs.StringVar(p, "o", def, usage+" (short for --output)")
}

// configName names the config file in use for headers and logs ("--masters" when none).
func configName(cfg *config.Config) string {
	if cfg.Path == "" {
		return "--masters"
	}
	return cfg.Path
}
