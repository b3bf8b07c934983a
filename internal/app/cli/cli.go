package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/internal/config"
)

// globalFlags are the flags of the root command, which every command takes (before
// or after its name).
type globalFlags struct {
	config       string
	masters      string
	readOnly     bool
	noAudit      bool
	restartGuard time.Duration
	guardSet     bool     // --restart-guard was given
	warnings     []string // config warnings from the last load
	notes        []string // config files skipped, and why
}

// register declares the global flags on root, as persistent flags.
func (g *globalFlags) register(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.StringVar(&g.config, "config", "", "config file (default: $REDLOCKCTL_CONFIG, ./config.toml, $XDG_CONFIG_HOME/redlockctl/config.toml)")
	fs.StringVar(&g.masters, "masters", "", "comma-separated master addresses host[:port] (port 6379 when left out) or redis:// URLs; no config file needed")
	fs.BoolVar(&g.readOnly, "read-only", false, "send no write command (admin actions are refused)")
	fs.BoolVar(&g.noAudit, "no-audit", false, "write no audit log line for admin actions (the default log: audit_log, or ~/.local/state/redlockctl/audit.log)")
	fs.Var(&guardFlag{g}, "restart-guard", "how long after a restart a master that does not fsync every write is not counted toward a quorum (lock.restart_guard; 0 turns the guard off; default: each lock's TTL)")
	root.RegisterFlagCompletionFunc("config", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"toml"}, cobra.ShellCompDirectiveFilterFileExt
	})
}

// guardFlag is --restart-guard: a duration that overrides the config's only when given.
type guardFlag struct{ g *globalFlags }

func (f *guardFlag) String() string {
	if !f.g.guardSet {
		return ""
	}
	return f.g.restartGuard.String()
}

func (f *guardFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	f.g.restartGuard, f.g.guardSet = d, true
	return nil
}

func (*guardFlag) Type() string { return "duration" }

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
	if g.guardSet {
		cfg.Lock.RestartGuard = g.restartGuard
	}
	if g.noAudit {
		cfg.AuditLog, cfg.AuditLogDefault = "", false
	}
	pools, err := cfg.Pools()
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	return cfg, pools, nil
}

// closePools closes every pool.
func closePools(pools []*redis.Pool) {
	for _, p := range pools {
		p.Close()
	}
}

// outputFlag declares -o/--output on c with default def, its values completed from
// values.
func outputFlag(c *cobra.Command, p *string, def, usage string, values ...string) {
	c.Flags().StringVarP(p, "output", "o", def, usage)
	c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// configName names the config file in use for headers and logs ("--masters" when none).
func configName(cfg *config.Config) string {
	if cfg.Path == "" {
		return "--masters"
	}
	return cfg.Path
}
