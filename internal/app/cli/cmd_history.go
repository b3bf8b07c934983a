package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/history"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
)

// historyTimeout bounds a --server request.
const historyTimeout = 30 * time.Second

// historyOptions are the flags of history.
type historyOptions struct {
	format, filter, at, since, until, server string
	expired                                  bool
	longerThan                               string
	limit                                    int
}

func newHistoryCmd(e *env) *cobra.Command {
	o := &historyOptions{}
	c := &cobra.Command{
		Use:   "history [RESOURCE...] (--at TIME | [--since D|TIME] [--until TIME] [--expired] [--longer-than D])",
		Short: "Who held a lock at an instant, which locks expired, which were held long: from serve's history",
		Long: "Answer from the history serve records (every lock lifecycle the live feed reports; [history] dir, or url for a PostgreSQL store several serves share): " +
			"--at names the holders at an instant, or says it is unknown (a feed gap, or nothing recording then) with the span; " +
			"--since/--until list the lifecycles held at some instant between them, --expired only those that expired while held, " +
			"--longer-than only those held longer.\n\n" +
			"RESOURCE is a resource name or a glob (its whole name); --filter takes the filter language on the rest (owner:, value:, lib:, state: the end). " +
			"TIME is RFC 3339 (2026-11-28T03:12:00Z), a local 15:04 (its latest occurrence), or -2h; D is a duration (90s, 2h, 1d). " +
			"It reads the store named by the config, or asks a running serve with --server URL (its /api/v1/history, behind --web.config.file like /metrics; " +
			"basic auth from the URL's user:password).",
		Example: "  redlockctl history billing:nightly --at 03:12\n" +
			"  redlockctl history --since 24h --expired\n" +
			"  redlockctl history 'jobs:*' --since -2h --longer-than 5m -o ndjson\n" +
			"  redlockctl history billing:nightly --at 2026-11-28T03:12:00Z --server http://exporter:7335",
		RunE: e.do(func(args []string) int { return runHistory(e, o, args) }),
	}
	outputFlag(c, &o.format, "table", "output: "+report.FormatNames(report.CmdHistory)+" (ndjson: one lifecycle a line)", report.Names(report.CmdHistory)...)
	fs := c.Flags()
	fs.StringVar(&o.at, "at", "", "the holders at TIME")
	fs.StringVar(&o.since, "since", "", "lifecycles held at some instant from D ago (or TIME) on")
	fs.StringVar(&o.until, "until", "", "lifecycles held at some instant up to TIME")
	fs.BoolVar(&o.expired, "expired", false, "only lifecycles that expired while held (their holder overran the TTL)")
	fs.StringVar(&o.longerThan, "longer-than", "", "only lifecycles held longer than D")
	fs.StringVar(&o.filter, "filter", "", "only the lifecycles matching FILTER (README: Filters; state: is the end, e.g. state:force-released)")
	fs.StringVar(&o.server, "server", "", "ask the serve at URL (http[s]://[user:password@]host:port) instead of reading the store")
	fs.IntVar(&o.limit, "limit", history.DefaultLimit, "list at most N lifecycles, the earliest acquired first")
	return c
}

// runHistory is `history [RESOURCE...] --at TIME | --since ... [-o FORMAT] [--server URL]`.
func runHistory(e *env, o *historyOptions, resources []string) int {
	stdout, stderr := e.stdout, e.stderr
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "redlockctl history: "+format+"\n", args...)
		return code
	}
	f, ferr := report.Choose(report.CmdHistory, o.format)
	if ferr != nil {
		return fail(exitUsage, "%v", ferr)
	}
	now := time.Now()
	req := history.Request{Resources: resources, Filter: o.filter, Limit: o.limit}
	var err error
	switch {
	case o.at != "" && (o.since != "" || o.until != "" || o.expired || o.longerThan != ""):
		return fail(exitUsage, "--at names the holders at one instant: it takes none of --since, --until, --expired, --longer-than")
	case o.at != "":
		if req.At, err = history.ParseTime(o.at, now); err != nil {
			return fail(exitUsage, "--at: %v", err)
		}
	case o.since == "" && o.until == "" && !o.expired && o.longerThan == "":
		return fail(exitUsage, "say what to answer: --at TIME, or --since D, --until TIME, --expired, --longer-than D")
	}
	if o.since != "" {
		if req.Since, err = history.ParseSince(o.since, now); err != nil {
			return fail(exitUsage, "--since: %v", err)
		}
	}
	if o.until != "" {
		if req.Until, err = history.ParseTime(o.until, now); err != nil {
			return fail(exitUsage, "--until: %v", err)
		}
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && req.Until.Before(req.Since) {
		return fail(exitUsage, "--until %s is before --since %s", req.Until.Format(time.RFC3339), req.Since.Format(time.RFC3339))
	}
	if o.expired {
		req.Ends = []string{history.Expired}
	}
	if o.longerThan != "" {
		if req.LongerThan, err = history.ParseDuration(o.longerThan); err != nil {
			return fail(exitUsage, "--longer-than: %v", err)
		}
	}
	if o.limit < 0 {
		return fail(exitUsage, "--limit %d: want a count", o.limit)
	}
	for _, r := range resources {
		if err := config.CheckGlob(r); err != nil {
			return fail(exitUsage, "resource %q: %v", r, err)
		}
	}

	var resp history.Response
	if o.server != "" {
		ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
		defer cancel()
		if resp, err = history.Ask(ctx, &http.Client{Timeout: historyTimeout}, o.server, req); err != nil {
			return fail(exitFailure, "--server: %v", err)
		}
	} else {
		cfg, pools, err := e.g.load()
		switch {
		case errors.Is(err, errNoConfig):
			cfg = config.Default() // no masters needed: the default store
		case err != nil:
			return fail(exitUsage, "%v", err)
		default:
			closePools(pools)
			warn(stderr, e.g.warnings)
		}
		if cfg.History.Dir == "" && cfg.History.URL == "" {
			return fail(exitUsage, "[history] dir is off: nothing is recorded here; ask a running serve with --server URL")
		}
		s, err := history.OpenConfig(cfg.History, true)
		if err != nil {
			return fail(exitFailure, "%v", err)
		}
		defer s.Close()
		if resp, err = s.Do(req, now); err != nil {
			return fail(exitFailure, "%v", err)
		}
	}
	w := bufio.NewWriter(stdout)
	if err := f.History(w, resp); err != nil {
		return fail(exitFailure, "write: %v", err)
	}
	if err := w.Flush(); err != nil {
		return fail(exitFailure, "write: %v", err)
	}
	if resp.Answer != nil && resp.Answer.Unknown != "" || resp.Result != nil && (len(resp.Result.Gaps) > 0 || resp.Result.Truncated) {
		return exitFindings
	}
	return exitOK
}
