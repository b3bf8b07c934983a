package config

import (
	"fmt"
	"strings"

	"github.com/redlockctl/redlockctl/redlock"
)

// Key documents one key of the config file, for the redlockctl-config(5) page.
type Key struct {
	// Table is where the key goes: "" (the top), "lock", "inspect", "inspect.scopes",
	// "history" or "masters".
	Table   string
	Name    string
	Type    string // duration, text, number, true/false, list of text
	Default string // "" when there is none
	Doc     string
}

// Keys lists every key the config file takes, table by table, with its default (the
// values Default holds) and what it does. A test checks that it and the file's schema
// name the same keys.
func Keys() []Key {
	d := Default()
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	dur := func(v fmt.Stringer) string { return q(v.String()) }
	list := func(ss []string) string {
		qs := make([]string, len(ss))
		for i, s := range ss {
			qs[i] = q(s)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	return []Key{
		{"", "name", "text", q(DefaultName), "the name the console's header, serve's metrics and the audit log give this set of masters"},
		{"", "label_color", "text", "", "the colour of the name in the console's header: " + strings.Join(LabelColors, ", ") + ", an ANSI number 0-255 or \"#rrggbb\""},
		{"", "read_only", "true/false", "false", "send no write command: every admin action is refused (as --read-only)"},
		{"", "audit_log", "text", "$XDG_STATE_HOME/redlockctl/audit.log", "the file each admin action is appended to, intent before the first command and outcome after (\"off\" for none); a configured file's directory must exist"},
		{"lock", "key_prefix", "text", q(""), "prefix of every lock key the redlock library writes (a resource R is the key key_prefix+R)"},
		{"lock", "default_ttl", "duration", dur(d.Lock.DefaultTTL), "TTL of acquire and run without --ttl"},
		{"lock", "drift_factor", "number", fmt.Sprint(redlock.DefaultDriftFactor), "clock drift allowed for, as a fraction of the TTL (0 <= x < 0.5)"},
		{"lock", "node_timeout", "duration", dur(d.Lock.NodeTimeout), "how long one master may take to answer one command"},
		{"lock", "retries", "number", fmt.Sprint(d.Lock.Retries), "how many more attempts an acquisition makes after the first (acquire --wait and run --wait retry until their wait)"},
		{"lock", "retry_delay", "duration", dur(d.Lock.RetryDelay), "an acquisition waits a random time below this between attempts"},
		{"lock", "restart_guard", "duration", "each lock's TTL", "how long after a restart a master that does not fsync every write (appendonly yes, appendfsync always) is not counted toward a quorum: it may have forgotten locks it granted. \"0s\" turns the guard off (throw-away masters started a moment ago); --restart-guard sets it for one command"},
		{"lock", "fencing", "true/false", "false", "take a fencing token with each lock (a counter beside the key, raised by every acquisition)"},
		{"inspect", "patterns", "list of text", list(d.Inspect.Patterns), "the key patterns the inspector scans (SCAN MATCH); with a key_prefix the default is [key_prefix+\"*\"]"},
		{"inspect", "resources", "list of text", "[]", "resources always shown, held or free"},
		{"inspect", "poll_interval", "duration", dur(d.Inspect.PollInterval), "time between polls of the console, dump --watch and serve"},
		{"inspect", "scan_count", "number", fmt.Sprint(d.Inspect.ScanCount), "the COUNT of each SCAN"},
		{"inspect", "max_keys", "number", fmt.Sprint(d.Inspect.MaxKeys), "the most keys one poll reads per master (a scan that reaches it is a finding)"},
		{"inspect", "timeout", "duration", dur(d.Inspect.Timeout), "how long one master may take to answer one read of a poll"},
		{"inspect", "max_ttl", "duration", dur(d.Inspect.MaxTTL), "a lock whose TTL is above this is an anomaly"},
		{"inspect", "health_every", "number", fmt.Sprint(d.Inspect.HealthEvery), "how many polls apart INFO and CONFIG are read (1: every poll)"},
		{"inspect", "reconcile_interval", "duration", dur(d.Inspect.ReconcileInterval), "how often serve reads every key of a master whose live feed is up, paced, to find and fix what the feed got wrong (between those reads its rows follow the feed)"},
		{"inspect", "groups", "list of text", "[]", "filters naming the group label of serve's live metrics, first match wins; a resource no group matches is grouped by its name up to the first ':'"},
		{"inspect", "max_groups", "number", fmt.Sprint(d.Inspect.MaxGroups), "the most distinct groups (the rest are \"other\")"},
		{"inspect.scopes", "pattern", "text", "", "a filter (resource name, lib:, owner:, value:) whose rows are judged with scope, whatever their library declares; first match wins"},
		{"inspect.scopes", "scope", "text", "", "\"redlock\" (by the quorum of the masters) or \"single\" (a single-instance lock, on its own master)"},
		{"history", "dir", "text", "$XDG_STATE_HOME/redlockctl/history", "the directory of the store serve records every lock lifecycle to, and that history reads (\"off\" for none); the packaged service's is /var/lib/redlockctl/history"},
		{"history", "max_size", "text", q("1GiB"), "the most the store may take on disk (KiB, MiB, GiB or KB, MB, GB); beyond it the oldest records go first (the embedded store only)"},
		{"history", "max_age", "text", q("14d"), "records older than this go (a duration, d for days); with url, whole days go (partitions), so a day more may stay"},
		{"history", "url", "text", "", "a PostgreSQL database (postgres://user@host:port/db) that serves record to instead of dir, so that several serves keep one history; max_size does not apply"},
		{"history", "password_env", "text", "", "the environment variable that holds the database's password (kept from run's command)"},
		{"history", "password_file", "text", "", "the file that holds the database's password (its first line)"},
		{"masters", "name", "text", "\"mN\" (N from 1)", "the master's name in every output"},
		{"masters", "addr", "text", "", "host:port, or a redis:// or rediss:// URL (one of addr, sentinels + master_name, or cluster)"},
		{"masters", "username", "text", "", "the ACL user for AUTH"},
		{"masters", "password", "text", "", "the password for AUTH, written in the file (a warning: prefer password_env or password_file)"},
		{"masters", "password_env", "text", "", "the environment variable that holds the password (kept from run's command)"},
		{"masters", "password_file", "text", "", "the file that holds the password (its first line)"},
		{"masters", "db", "number", "0", "the database number"},
		{"masters", "tls", "true/false", "false", "connect with TLS"},
		{"masters", "tls_ca", "text", "", "the CA certificates (PEM) that sign the server's certificate (default: the system's)"},
		{"masters", "tls_cert", "text", "", "the client certificate (PEM), for mutual TLS"},
		{"masters", "tls_key", "text", "", "the client certificate's key (PEM)"},
		{"masters", "tls_server_name", "text", "", "the name the server's certificate must carry (default: the host of addr)"},
		{"masters", "tls_insecure_skip_verify", "true/false", "false", "accept any server certificate (testing only)"},
		{"masters", "sentinels", "list of text", "", "a Sentinel group: the sentinels' host:port addresses (with master_name)"},
		{"masters", "master_name", "text", "", "the name the sentinels monitor the master by"},
		{"masters", "sentinel_username", "text", "", "the ACL user for AUTH on the sentinels"},
		{"masters", "sentinel_password", "text", "", "the sentinels' password, written in the file"},
		{"masters", "sentinel_password_env", "text", "", "the environment variable that holds the sentinels' password"},
		{"masters", "sentinel_password_file", "text", "", "the file that holds the sentinels' password"},
		{"masters", "cluster", "list of text", "", "a Redis Cluster: seed node addresses"},
	}
}
