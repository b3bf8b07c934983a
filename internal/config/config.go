// Package config reads redlockctl's TOML config: the schema, the lookup order, defaults,
// validation whose errors name file:line, and dialing (pools with AUTH and TLS, the
// redlock options). It holds no state across calls and sends nothing to any server: it
// only builds what others dial with, and it never prints or logs a secret.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/redlock"
)

// Defaults for every config field that the file leaves unset.
const (
	DefaultName         = "redlockctl"
	DefaultTTL          = 30 * time.Second
	DefaultPollInterval = time.Second
	DefaultScanCount    = 1000
	DefaultMaxKeys      = 2000000
	DefaultTimeout      = 500 * time.Millisecond
	DefaultMaxTTL       = 5 * time.Minute
	// DefaultReconcileInterval is how often serve reads a fed master's keys whole.
	DefaultReconcileInterval = time.Minute
	DefaultPattern           = "*"
)

// Config is a parsed redlockctl config file (or --masters flag).
type Config struct {
	Path       string // file it came from; "" for --masters
	Name       string
	LabelColor string
	ReadOnly   bool
	// AuditLog is where admin actions are written ("" : explicitly none, audit_log =
	// "off" or --no-audit). By default, DefaultAuditLog.
	AuditLog string
	// AuditLogDefault says AuditLog is the default path, whose directory may be
	// created; a configured path must exist.
	AuditLogDefault bool
	Lock            LockConfig
	Inspect         InspectConfig
	History         HistoryConfig
	Masters         []MasterConfig
}

// HistoryConfig is the [history] table: where serve records the lock lifecycles the
// live feed reports (package history).
type HistoryConfig struct {
	// Dir is the store's directory ("": none, dir = "off"). By default,
	// DefaultHistoryDir. Unused when URL is set.
	Dir     string
	MaxSize int64         // bytes; the oldest records go first beyond it (embedded store only)
	MaxAge  time.Duration // records older than this go
	// URL is a PostgreSQL database (postgres://user@host:port/db?...) shared by
	// several serves, without its password: "" for the embedded store in Dir.
	URL string
	// Password is the database password (a secret: never printed), from
	// password_env, password_file, or the URL as written (PasswordLiteral).
	Password        string
	PasswordLiteral bool
	// Where the file said the password is (names, never the secret).
	PasswordEnv, PasswordFile string
}

// Where names the store: its directory, or the database's URL (which holds no
// password).
func (h HistoryConfig) Where() string {
	if h.URL != "" {
		return h.URL
	}
	return h.Dir
}

// String describes the store without its password.
func (h HistoryConfig) String() string { return "history(" + h.Where() + ")" }

// GoString keeps the password out of %#v output too.
func (h HistoryConfig) GoString() string { return "HistoryConfig{" + h.Where() + "}" }

// Defaults of [history].
const (
	DefaultHistoryMaxSize = 1 << 30
	DefaultHistoryMaxAge  = 14 * 24 * time.Hour
)

// DefaultHistoryDir is the history store of a config that names none:
// $XDG_STATE_HOME/redlockctl/history, or ~/.local/state/redlockctl/history ("" when
// neither can be found).
func DefaultHistoryDir() string {
	if a := DefaultAuditLog(); a != "" {
		return filepath.Join(filepath.Dir(a), "history")
	}
	return ""
}

// LockConfig is the [lock] table: options for the redlock client.
type LockConfig struct {
	KeyPrefix   string
	DefaultTTL  time.Duration
	DriftFactor float64
	NodeTimeout time.Duration
	Retries     int
	RetryDelay  time.Duration
	// RestartGuard: how long after a restart a master that does not fsync every write
	// is not counted toward a quorum; -1 (the default) is each lock's TTL, 0 off.
	RestartGuard time.Duration
	Fencing      bool
}

// InspectConfig is the [inspect] table: what the poller reads and how often.
type InspectConfig struct {
	Patterns     []string
	Resources    []string
	PollInterval time.Duration
	ScanCount    int
	MaxKeys      int
	Timeout      time.Duration
	MaxTTL       time.Duration
	// HealthEvery is how many polls apart INFO and CONFIG are read (1 = every poll).
	HealthEvery int
	// ReconcileInterval is how often serve reads every key of a master whose live
	// feed is up, to find and fix what the feed got wrong (between those reads, its
	// rows come from the feed's changes).
	ReconcileInterval time.Duration
	// Groups name the group label of serve's live metrics: filters (first match
	// wins); a resource no group matches is grouped by its name up to the first ':'.
	Groups []string
	// MaxGroups bounds the distinct groups (the rest are "other").
	MaxGroups int
	// Scopes are the [[inspect.scopes]] overrides of a lock's scope, first match wins.
	Scopes []ScopeRule
}

// ScopeRule is one [[inspect.scopes]] entry: the rows its Pattern matches (a filter in
// redlockctl's query language, on the resource name, lib, owner or value) are judged
// with Scope, "redlock" or "single", whatever their library declares.
type ScopeRule struct {
	Pattern string
	Scope   string
}

// ScopeNames are the values a ScopeRule's Scope may take.
var ScopeNames = []string{"redlock", "single"}

// MasterConfig is one [[masters]] entry: exactly one of Addr, Sentinels + MasterName,
// or Cluster (see Kind). Password and SentinelPassword hold resolved secrets and are
// never printed.
type MasterConfig struct {
	Name                  string
	Addr                  string // a plain server; "" for a Sentinel group or a cluster
	Username              string
	Password              string
	PasswordLiteral       bool // the password was written in the file
	DB                    int
	TLS                   bool
	TLSCA                 string
	TLSCert               string
	TLSKey                string
	TLSServerName         string
	TLSInsecureSkipVerify bool

	Sentinels        []string // a Sentinel group: the sentinels' addresses...
	MasterName       string   // ...and the name they monitor it by
	SentinelUsername string   // AUTH on the sentinels (optional)
	SentinelPassword string   // from sentinel_password_env or sentinel_password_file
	// SecretEnv names the environment variables the entry's passwords came from
	// (password_env, sentinel_password_env): `run` keeps them from its command.
	SecretEnv []string
	Cluster   []string // a Redis Cluster: seed node addresses
	// Where the file said the passwords are (names and paths, never a secret):
	// password_env, password_file, sentinel_password_env, sentinel_password_file.
	PasswordEnv, PasswordFile                 string
	SentinelPasswordEnv, SentinelPasswordFile string
}

// String describes the master without its password.
func (m MasterConfig) String() string { return m.Name + "@" + m.Where() }

// GoString keeps the password out of %#v output too.
func (m MasterConfig) GoString() string { return "MasterConfig{" + m.String() + "}" }

// LabelColors are the colour names label_color accepts (besides ANSI numbers 0-255 and
// "#rrggbb"); the console maps each of them to a terminal colour.
var LabelColors = []string{"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
	"gray", "grey", "orange", "bright-red", "bright-green", "bright-yellow", "bright-blue",
	"bright-magenta", "bright-cyan"}

// ValidLabelColor reports whether s is a label_color the console can show ("" = none).
func ValidLabelColor(s string) bool {
	s = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	if s == "" || slices.Contains(LabelColors, s) {
		return true
	}
	if n, err := strconv.Atoi(s); err == nil {
		return n >= 0 && n <= 255
	}
	if len(s) == 7 && s[0] == '#' {
		_, err := strconv.ParseUint(s[1:], 16, 32)
		return err == nil
	}
	return false
}

// Quorum returns N/2+1 for the configured masters.
func (c *Config) Quorum() int { return len(c.Masters)/2 + 1 }

// Drift returns the drift allowance for a lock of ttl: ttl*drift_factor + 2 ms.
func (c *Config) Drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.Lock.DriftFactor) + 2*time.Millisecond
}

// Key returns the Redis key of a resource name (key_prefix + name).
func (c *Config) Key(resource string) string { return c.Lock.KeyPrefix + resource }

// Resource returns the resource name of a key (the key minus key_prefix).
func (c *Config) Resource(key string) string { return strings.TrimPrefix(key, c.Lock.KeyPrefix) }

// Default returns a config with every default set and no masters. The defaults of
// fields a file leaves unset: name "redlockctl"; [lock] key_prefix "", default_ttl 30s,
// drift_factor 0.01, node_timeout 50ms, retries 32, retry_delay 100ms, fencing false;
// [inspect] patterns ["*"] (or [key_prefix+"*"] when a prefix is set), resources [],
// poll_interval 1s, scan_count 1000, max_keys 2000000, timeout 500ms, max_ttl 5m,
// health_every 5 (INFO and CONFIG every 5th poll); [[masters]] name "mN" (N from 1),
// db 0, no AUTH, no TLS.
func Default() *Config {
	return &Config{
		Name:            DefaultName,
		AuditLog:        DefaultAuditLog(),
		AuditLogDefault: true,
		Lock: LockConfig{
			DefaultTTL:   DefaultTTL,
			DriftFactor:  redlock.DefaultDriftFactor,
			NodeTimeout:  redlock.DefaultNodeTimeout,
			Retries:      redlock.DefaultRetries,
			RetryDelay:   redlock.DefaultRetryDelay,
			RestartGuard: -1,
		},
		History: HistoryConfig{Dir: DefaultHistoryDir(), MaxSize: DefaultHistoryMaxSize, MaxAge: DefaultHistoryMaxAge},
		Inspect: InspectConfig{
			Patterns:          []string{DefaultPattern},
			PollInterval:      DefaultPollInterval,
			ScanCount:         DefaultScanCount,
			MaxKeys:           DefaultMaxKeys,
			Timeout:           DefaultTimeout,
			MaxTTL:            DefaultMaxTTL,
			HealthEvery:       5,
			ReconcileInterval: DefaultReconcileInterval,
			MaxGroups:         100,
		},
	}
}

// FromAddrs returns a default config over the given addresses (the --masters flag);
// each master is named after its address.
func FromAddrs(addrs []string) (*Config, []string, error) {
	c := Default()
	if err := c.SetMasters(addrs); err != nil {
		return nil, nil, err
	}
	return c, c.warnings(), nil
}

// SetMasters replaces the configured masters with the given addresses (the --masters
// flag on top of a file), each host:port or a redis:// or rediss:// URL, and checks them.
func (c *Config) SetMasters(addrs []string) error {
	c.Masters = nil
	for i, a := range addrs {
		if a = strings.TrimSpace(a); a != "" {
			m, err := fromArg(i, a)
			if err != nil {
				return err
			}
			c.Masters = append(c.Masters, m)
		}
	}
	return c.checkMasters(func(int, string) string { return "--masters" })
}

// checkMasters reports zero masters, missing addresses and duplicates; where(i, key)
// names the place of master i's key.
func (c *Config) checkMasters(where func(i int, key string) string) error {
	if len(c.Masters) == 0 {
		return fmt.Errorf("%s: no masters configured (add [[masters]] entries or use --masters a,b,c)", where(-1, ""))
	}
	names, addrs := map[string]int{}, map[string]int{}
	for i := range c.Masters {
		m := &c.Masters[i]
		if m.Addr == "" && m.Kind() == KindAddr {
			return fmt.Errorf("%s: masters[%d]: addr is missing (an entry needs one of addr, sentinels + master_name, or cluster)", where(i, "name"), i)
		}
		if m.Kind() == KindAddr && !strings.Contains(m.Addr, ":") {
			return fmt.Errorf("%s: masters[%d].addr: %q has no port (want host:port)", where(i, "addr"), i, m.Addr)
		}
		if m.Name == "" {
			m.Name = fmt.Sprintf("m%d", i+1)
		}
		if m.Kind() == KindAddr {
			id := fmt.Sprintf("%s/%d", m.Addr, m.DB)
			if j, dup := addrs[id]; dup {
				return fmt.Errorf("%s: masters[%d].addr: duplicate address %q (also masters[%d])", where(i, "addr"), i, m.Addr, j)
			}
			addrs[id] = i
		}
		if j, dup := names[m.Name]; dup {
			return fmt.Errorf("%s: masters[%d].name: duplicate name %q (also masters[%d])", where(i, "name"), i, m.Name, j)
		}
		names[m.Name] = i
	}
	return c.checkTopologies(where)
}

// warnings lists what is legal but unwise.
func (c *Config) warnings() []string {
	var w []string
	where := c.Path
	if where == "" {
		where = "--masters"
	}
	if n := len(c.Masters); n%2 == 0 {
		w = append(w, fmt.Sprintf("%s: %d masters is an even number: quorum %d tolerates as many failures as %d masters would", where, n, c.Quorum(), n-1))
	}
	ttl := c.Lock.DefaultTTL
	if budget := ttl - c.Drift(ttl) - c.Lock.NodeTimeout; budget < ttl/2 {
		w = append(w, fmt.Sprintf("%s: lock.default_ttl %v leaves %v of validity after the drift allowance %v and node_timeout %v: raise default_ttl or lower drift_factor/node_timeout",
			where, ttl, budget, c.Drift(ttl), c.Lock.NodeTimeout))
	}
	if c.Inspect.Timeout >= c.Inspect.PollInterval*4 {
		w = append(w, fmt.Sprintf("%s: inspect.timeout %v is much longer than poll_interval %v: polls will stretch", where, c.Inspect.Timeout, c.Inspect.PollInterval))
	}
	return w
}

// SecretEnv returns the names of the environment variables that hold the masters'
// passwords and the history database's, in config order without repeats.
func (c *Config) SecretEnv() []string {
	var names []string
	if c.History.PasswordEnv != "" {
		names = append(names, c.History.PasswordEnv)
	}
	for _, m := range c.Masters {
		for _, n := range m.SecretEnv {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// DefaultAuditLog is the audit log of a config that names none:
// $XDG_STATE_HOME/redlockctl/audit.log, or ~/.local/state/redlockctl/audit.log ("" when
// neither can be found: then an admin action is refused until one is configured).
func DefaultAuditLog() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "redlockctl", "audit.log")
}
