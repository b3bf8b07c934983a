package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/admin"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
)

// adminOutput returns the format an admin command's -o names, or reports (false) one
// that it does not take.
func adminOutput(stderr io.Writer, name, out string) (report.Format, bool) {
	f, err := report.Choose(name, out)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return report.Format{}, false
	}
	return f, true
}

// adminOutputFlag declares an admin command's -o, from the formats that take it.
func adminOutputFlag(c *cobra.Command, p *string, name string) {
	outputFlag(c, p, "table", "output: "+report.FormatNames(name), report.Names(name)...)
}

func adminLoad(g *globalFlags, name string, stderr io.Writer) (*config.Config, []*redis.Pool, int, bool) {
	cfg, pools, err := g.load()
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	}
	warn(stderr, g.warnings)
	return cfg, pools, exitOK, true
}

func adminNew(cfg *config.Config, pools []*redis.Pool, opts []redlock.Option, name string, stderr io.Writer) (*admin.Actions, *redlock.Client, int, bool) {
	client, err := cfg.Client(pools, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "redlockctl %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	}
	acts := admin.New(cfg, client, pools)
	return acts, client, exitOK, true
}

// adminRefused reports an action refused before anything was sent (read-only, or an
// audit log that cannot be written) and returns the usage exit code.
func adminRefused(stderr io.Writer, name, resource string, err error) int {
	if errors.Is(err, admin.ErrAudit) {
		fmt.Fprintf(stderr, "redlockctl %s: refused: %v\n", name, err)
		return exitUsage
	}
	return adminReadOnly(stderr, name, resource)
}

func adminReadOnly(stderr io.Writer, name, resource string) int {
	fmt.Fprintf(stderr, "redlockctl %s: refused: read-only (--read-only or read_only = true in the config): nothing was sent for %q\n", name, resource)
	return exitUsage
}

// adminReport prints an action's result in format f (the table: a summary and one
// line per master). Errors and the audit-log state go to stderr.
func adminReport(stdout, stderr io.Writer, f report.Format, cfg *config.Config, r admin.ActionResult) {
	if r.AuditError != "" {
		warn(stderr, []string{r.AuditError})
	}
	if err := f.Action(stdout, stderr, admin.Output{ActionResult: r, Config: cfg}); err != nil {
		fmt.Fprintf(stderr, "redlockctl: %v\n", err)
	}
}

// adminTTL defaults *ttl to the config's lock.default_ttl and reports (false) a TTL
// that leaves no validity after the drift allowance and the node timeout.
func adminTTL(cfg *config.Config, ttl *time.Duration, name string, stderr io.Writer) bool {
	if *ttl == 0 {
		*ttl = cfg.Lock.DefaultTTL
	}
	if d := cfg.Drift(*ttl); *ttl <= d+cfg.Lock.NodeTimeout {
		fmt.Fprintf(stderr, "redlockctl %s: --ttl %v leaves no validity after the drift allowance %v and node timeout %v\n", name, *ttl, d, cfg.Lock.NodeTimeout)
		return false
	}
	return true
}
