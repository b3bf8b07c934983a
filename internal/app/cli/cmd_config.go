package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/internal/config"
)

func newConfigCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Check the config file",
		Args:  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown subcommand %q: want check (redlockctl config check [--config FILE])", args[0])
			}
			return errors.New("want the subcommand check (redlockctl config check [--config FILE])")
		},
	}
	c.AddCommand(&cobra.Command{
		Use:     "check",
		Short:   "Check the config and print it as it takes effect (secrets redacted)",
		Long:    "Load the config exactly as every command does, and print the effective config with every default filled in and every secret shown as <redacted> (a password read from the environment as its password_env).",
		Example: "  redlockctl config check --config /etc/redlockctl/config.toml",
		Args:    noArgs,
		RunE:    e.do(func([]string) int { return runConfigCheck(e) }),
	})
	return c
}

// runConfigCheck is `config check`: validate the config (as every command would load it)
// and print the effective config, every default filled in and every secret shown as
// <redacted>, like `promtool check config` or `nginx -t`. Exit 0 when it is valid, 2
// otherwise (the error names file:line).
func runConfigCheck(e *env) int {
	stdout, stderr, g := e.stdout, e.stderr, e.g
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl config check: %v\n", err)
		return exitUsage
	}
	closePools(pools)
	warn(stderr, g.warnings)
	writeEffective(stdout, cfg)
	fmt.Fprintf(stderr, "redlockctl config check: %s is valid (%d masters, quorum %d)\n", configName(cfg), len(cfg.Masters), cfg.Quorum())
	return exitOK
}

// writeEffective prints cfg as TOML that loads back to the same config, secrets
// redacted.
func writeEffective(w io.Writer, c *config.Config) {
	q := strconv.Quote
	list := func(ss []string) string {
		qs := make([]string, len(ss))
		for i, s := range ss {
			qs[i] = q(s)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	dur := func(d time.Duration) string { return q(d.String()) }
	fmt.Fprintf(w, "# effective config of %s; a password written in it is shown as <redacted>\n", configName(c))
	fmt.Fprintf(w, "name = %s\nlabel_color = %s\nread_only = %v\naudit_log = %s\n", q(c.Name), q(c.LabelColor), c.ReadOnly, q(c.AuditLog))
	l := c.Lock
	fmt.Fprintf(w, "\n[lock]\nkey_prefix = %s\ndefault_ttl = %s\ndrift_factor = %v\nnode_timeout = %s\nretries = %d\nretry_delay = %s\nfencing = %v\n",
		q(l.KeyPrefix), dur(l.DefaultTTL), l.DriftFactor, dur(l.NodeTimeout), l.Retries, dur(l.RetryDelay), l.Fencing)
	if l.RestartGuard >= 0 {
		fmt.Fprintf(w, "restart_guard = %s\n", dur(l.RestartGuard))
	} else {
		fmt.Fprintln(w, "# restart_guard: each lock's TTL (the default)")
	}
	in := c.Inspect
	fmt.Fprintf(w, "\n[inspect]\npatterns = %s\nresources = %s\npoll_interval = %s\nscan_count = %d\nmax_keys = %d\ntimeout = %s\nmax_ttl = %s\nhealth_every = %d\ngroups = %s\nmax_groups = %d\n",
		list(in.Patterns), list(in.Resources), dur(in.PollInterval), in.ScanCount, in.MaxKeys, dur(in.Timeout), dur(in.MaxTTL), in.HealthEvery, list(in.Groups), in.MaxGroups)
	for _, m := range c.Masters {
		fmt.Fprintf(w, "\n[[masters]]\nname = %s\n", q(m.Name))
		switch m.Kind() {
		case config.KindSentinel:
			fmt.Fprintf(w, "sentinels = %s\nmaster_name = %s\n", list(m.Sentinels), q(m.MasterName))
			if m.SentinelUsername != "" {
				fmt.Fprintf(w, "sentinel_username = %s\n", q(m.SentinelUsername))
			}
			secret(w, "sentinel_password", m.SentinelPassword, m.SentinelPasswordEnv, m.SentinelPasswordFile)
		case config.KindCluster:
			fmt.Fprintf(w, "cluster = %s\n", list(m.Cluster))
		default:
			fmt.Fprintf(w, "addr = %s\n", q(m.Addr))
		}
		if m.Username != "" {
			fmt.Fprintf(w, "username = %s\n", q(m.Username))
		}
		secret(w, "password", m.Password, m.PasswordEnv, m.PasswordFile)
		if m.DB != 0 {
			fmt.Fprintf(w, "db = %d\n", m.DB)
		}
		if m.TLS {
			fmt.Fprintln(w, "tls = true")
			for _, kv := range [][2]string{{"tls_ca", m.TLSCA}, {"tls_cert", m.TLSCert}, {"tls_server_name", m.TLSServerName}} {
				if kv[1] != "" {
					fmt.Fprintf(w, "%s = %s\n", kv[0], q(kv[1]))
				}
			}
			if m.TLSKey != "" {
				fmt.Fprintln(w, `tls_key = "<redacted>"`)
			}
			if m.TLSInsecureSkipVerify {
				fmt.Fprintln(w, "tls_insecure_skip_verify = true")
			}
		}
	}
}

// secret writes a password key as the file gave it: the variable or file it is read
// from, or <redacted> for a password written in the file (or a URL).
func secret(w io.Writer, key, value, env, file string) {
	switch {
	case env != "":
		fmt.Fprintf(w, "%s_env = %s\n", key, strconv.Quote(env))
	case file != "":
		fmt.Fprintf(w, "%s_file = %s\n", key, strconv.Quote(file))
	case value != "":
		fmt.Fprintf(w, "%s = \"<redacted>\"\n", key)
	}
}
