package inspect

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
)

// Defaults for every config field that the file leaves unset.
const (
	DefaultName         = "redlockctl"
	DefaultTTL          = 30 * time.Second
	DefaultPollInterval = time.Second
	DefaultScanCount    = 1000
	DefaultMaxKeys      = 100000
	DefaultTimeout      = 500 * time.Millisecond
	DefaultMaxTTL       = 5 * time.Minute
	DefaultPattern      = "*"
)

// Config is a parsed redlockctl config file (or --masters flag).
type Config struct {
	Path       string // file it came from; "" for --masters
	Name       string
	LabelColor string
	ReadOnly   bool
	AuditLog   string
	Lock       LockConfig
	Inspect    InspectConfig
	Masters    []MasterConfig
}

// LockConfig is the [lock] table: options for the redlock client.
type LockConfig struct {
	KeyPrefix   string
	DefaultTTL  time.Duration
	DriftFactor float64
	NodeTimeout time.Duration
	Retries     int
	RetryDelay  time.Duration
	Fencing     bool
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
}

// MasterConfig is one [[masters]] entry. Password holds the resolved secret and is
// never printed.
type MasterConfig struct {
	Name                  string
	Addr                  string
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
}

// String describes the master without its password.
func (m MasterConfig) String() string { return m.Name + "@" + m.Addr }

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
// poll_interval 1s, scan_count 1000, max_keys 100000, timeout 500ms, max_ttl 5m,
// health_every 5 (INFO and CONFIG every 5th poll); [[masters]] name "mN" (N from 1),
// db 0, no AUTH, no TLS.
func Default() *Config {
	return &Config{
		Name: DefaultName,
		Lock: LockConfig{
			DefaultTTL:  DefaultTTL,
			DriftFactor: redlock.DefaultDriftFactor,
			NodeTimeout: redlock.DefaultNodeTimeout,
			Retries:     redlock.DefaultRetries,
			RetryDelay:  redlock.DefaultRetryDelay,
		},
		Inspect: InspectConfig{
			Patterns:     []string{DefaultPattern},
			PollInterval: DefaultPollInterval,
			ScanCount:    DefaultScanCount,
			MaxKeys:      DefaultMaxKeys,
			Timeout:      DefaultTimeout,
			MaxTTL:       DefaultMaxTTL,
			HealthEvery:  5,
		},
	}
}

// FromAddrs returns a default config over the given addresses (the --masters flag);
// each master is named after its address.
func FromAddrs(addrs []string) (*Config, []string, error) {
	c := Default()
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		c.Masters = append(c.Masters, MasterConfig{Name: a, Addr: a})
	}
	if err := c.checkMasters(func(int, string) string { return "--masters" }); err != nil {
		return nil, nil, err
	}
	return c, c.warnings(), nil
}

// SetMasters replaces the configured masters with the given addresses (the --masters
// flag on top of a file) and checks them.
func (c *Config) SetMasters(addrs []string) error {
	c.Masters = nil
	for _, a := range addrs {
		if a = strings.TrimSpace(a); a != "" {
			c.Masters = append(c.Masters, MasterConfig{Name: a, Addr: a})
		}
	}
	return c.checkMasters(func(int, string) string { return "--masters" })
}

// file mirrors the TOML layout; durations are strings parsed with positions.
type file struct {
	Name       string       `toml:"name"`
	LabelColor string       `toml:"label_color"`
	ReadOnly   bool         `toml:"read_only"`
	AuditLog   string       `toml:"audit_log"`
	Lock       fileLock     `toml:"lock"`
	Inspect    fileInspect  `toml:"inspect"`
	Masters    []fileMaster `toml:"masters"`
}

type fileLock struct {
	KeyPrefix   string  `toml:"key_prefix"`
	DefaultTTL  string  `toml:"default_ttl"`
	DriftFactor float64 `toml:"drift_factor"`
	NodeTimeout string  `toml:"node_timeout"`
	Retries     int     `toml:"retries"`
	RetryDelay  string  `toml:"retry_delay"`
	Fencing     bool    `toml:"fencing"`
}

type fileInspect struct {
	Patterns     []string `toml:"patterns"`
	Resources    []string `toml:"resources"`
	PollInterval string   `toml:"poll_interval"`
	ScanCount    int      `toml:"scan_count"`
	MaxKeys      int      `toml:"max_keys"`
	Timeout      string   `toml:"timeout"`
	MaxTTL       string   `toml:"max_ttl"`
	HealthEvery  int      `toml:"health_every"`
}

type fileMaster struct {
	Name                  string `toml:"name"`
	Addr                  string `toml:"addr"`
	Username              string `toml:"username"`
	Password              string `toml:"password"`
	PasswordEnv           string `toml:"password_env"`
	PasswordFile          string `toml:"password_file"`
	DB                    int    `toml:"db"`
	TLS                   bool   `toml:"tls"`
	TLSCA                 string `toml:"tls_ca"`
	TLSCert               string `toml:"tls_cert"`
	TLSKey                string `toml:"tls_key"`
	TLSServerName         string `toml:"tls_server_name"`
	TLSInsecureSkipVerify bool   `toml:"tls_insecure_skip_verify"`
}

// LoadConfig reads and checks the config file at path. Errors name path:line; the
// returned warnings are worth showing but do not stop anything.
func LoadConfig(path string) (*Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	return parseConfig(path, data)
}

func parseConfig(path string, data []byte) (*Config, []string, error) {
	var f file
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		if m := reTypeErr.FindStringSubmatch(err.Error()); m != nil {
			return nil, nil, fmt.Errorf("%s:%s: %s: %s", path, m[1], m[2], m[3])
		}
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	lines := locateKeys(data)
	at := func(index int, key string) string { // path:line of a key (index: masters entry or -1)
		if n := lines.line(index, key); n > 0 {
			return fmt.Sprintf("%s:%d", path, n)
		}
		return path
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0].String()
		return nil, nil, fmt.Errorf("%s: unknown key %q", lines.firstUndecoded(path, und), k)
	}
	c := Default()
	c.Path = path
	def := func(key ...string) bool { return md.IsDefined(key...) }
	if def("name") {
		c.Name = f.Name
	}
	if !ValidLabelColor(f.LabelColor) {
		return nil, nil, fmt.Errorf("%s: label_color: unknown colour %q (want a name such as %q, an ANSI number 0-255, or \"#rrggbb\")", at(-1, "label_color"), f.LabelColor, "red")
	}
	c.LabelColor = f.LabelColor
	c.ReadOnly = f.ReadOnly
	c.AuditLog = f.AuditLog
	c.Lock.KeyPrefix = f.Lock.KeyPrefix
	c.Lock.Fencing = f.Lock.Fencing

	dur := func(set bool, s, key string, dst *time.Duration, allowZero bool) error {
		if !set {
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%s: %s: bad duration %q (want e.g. \"500ms\", \"30s\")", at(-1, key), key, s)
		}
		if d < 0 || (d == 0 && !allowZero) {
			return fmt.Errorf("%s: %s: must be positive, got %q", at(-1, key), key, s)
		}
		*dst = d
		return nil
	}
	for _, e := range []error{
		dur(def("lock", "default_ttl"), f.Lock.DefaultTTL, "lock.default_ttl", &c.Lock.DefaultTTL, false),
		dur(def("lock", "node_timeout"), f.Lock.NodeTimeout, "lock.node_timeout", &c.Lock.NodeTimeout, false),
		dur(def("lock", "retry_delay"), f.Lock.RetryDelay, "lock.retry_delay", &c.Lock.RetryDelay, true),
		dur(def("inspect", "poll_interval"), f.Inspect.PollInterval, "inspect.poll_interval", &c.Inspect.PollInterval, false),
		dur(def("inspect", "timeout"), f.Inspect.Timeout, "inspect.timeout", &c.Inspect.Timeout, false),
		dur(def("inspect", "max_ttl"), f.Inspect.MaxTTL, "inspect.max_ttl", &c.Inspect.MaxTTL, false),
	} {
		if e != nil {
			return nil, nil, e
		}
	}
	if def("lock", "drift_factor") {
		if f.Lock.DriftFactor < 0 || f.Lock.DriftFactor >= 0.5 {
			return nil, nil, fmt.Errorf("%s: lock.drift_factor: want 0 <= x < 0.5, got %v", at(-1, "lock.drift_factor"), f.Lock.DriftFactor)
		}
		c.Lock.DriftFactor = f.Lock.DriftFactor
	}
	if def("lock", "retries") {
		if f.Lock.Retries < 0 {
			return nil, nil, fmt.Errorf("%s: lock.retries: must be >= 0, got %d", at(-1, "lock.retries"), f.Lock.Retries)
		}
		c.Lock.Retries = f.Lock.Retries
	}
	posInt := func(set bool, v int, key string, dst *int) error {
		if !set {
			return nil
		}
		if v <= 0 {
			return fmt.Errorf("%s: %s: must be > 0, got %d", at(-1, key), key, v)
		}
		*dst = v
		return nil
	}
	for _, e := range []error{
		posInt(def("inspect", "scan_count"), f.Inspect.ScanCount, "inspect.scan_count", &c.Inspect.ScanCount),
		posInt(def("inspect", "max_keys"), f.Inspect.MaxKeys, "inspect.max_keys", &c.Inspect.MaxKeys),
		posInt(def("inspect", "health_every"), f.Inspect.HealthEvery, "inspect.health_every", &c.Inspect.HealthEvery),
	} {
		if e != nil {
			return nil, nil, e
		}
	}
	if def("inspect", "patterns") {
		c.Inspect.Patterns = f.Inspect.Patterns
	} else if c.Lock.KeyPrefix != "" {
		c.Inspect.Patterns = []string{c.Lock.KeyPrefix + "*"}
	}
	for _, p := range c.Inspect.Patterns {
		if err := CheckGlob(p); err != nil {
			return nil, nil, fmt.Errorf("%s: inspect.patterns: %v", at(-1, "inspect.patterns"), err)
		}
	}
	seenRes := map[string]bool{}
	for _, r := range f.Inspect.Resources {
		if r == "" || seenRes[r] {
			return nil, nil, fmt.Errorf("%s: inspect.resources: empty or duplicate resource %q", at(-1, "inspect.resources"), r)
		}
		seenRes[r] = true
	}
	c.Inspect.Resources = f.Inspect.Resources
	if len(c.Inspect.Patterns) == 0 && len(c.Inspect.Resources) == 0 {
		return nil, nil, fmt.Errorf("%s: inspect.patterns is empty and no inspect.resources are configured: nothing would be inspected (patterns = [\"*\"] reads every key)", at(-1, "inspect.patterns"))
	}

	for i, fm := range f.Masters {
		m := MasterConfig{
			Name: fm.Name, Addr: fm.Addr, Username: fm.Username, DB: fm.DB,
			TLS: fm.TLS, TLSCA: fm.TLSCA, TLSCert: fm.TLSCert, TLSKey: fm.TLSKey,
			TLSServerName: fm.TLSServerName, TLSInsecureSkipVerify: fm.TLSInsecureSkipVerify,
		}
		n := 0
		for _, set := range []bool{fm.Password != "", fm.PasswordEnv != "", fm.PasswordFile != ""} {
			if set {
				n++
			}
		}
		if n > 1 {
			return nil, nil, fmt.Errorf("%s: masters[%d]: set only one of password, password_env, password_file", at(i, "password_env"), i)
		}
		switch {
		case fm.Password != "":
			m.Password, m.PasswordLiteral = fm.Password, true
		case fm.PasswordEnv != "":
			v, ok := os.LookupEnv(fm.PasswordEnv)
			if !ok {
				return nil, nil, fmt.Errorf("%s: masters[%d].password_env: environment variable %s is not set", at(i, "password_env"), i, fm.PasswordEnv)
			}
			m.Password = v
		case fm.PasswordFile != "":
			b, err := os.ReadFile(fm.PasswordFile)
			if err != nil {
				var pe *os.PathError
				reason := err.Error()
				if errors.As(err, &pe) {
					reason = pe.Err.Error()
				}
				return nil, nil, fmt.Errorf("%s: masters[%d].password_file: cannot read %s: %s", at(i, "password_file"), i, fm.PasswordFile, reason)
			}
			m.Password = strings.TrimRight(string(b), "\r\n")
		}
		if fm.DB < 0 {
			return nil, nil, fmt.Errorf("%s: masters[%d].db: must be >= 0", at(i, "db"), i)
		}
		if !fm.TLS && (fm.TLSCA != "" || fm.TLSCert != "" || fm.TLSKey != "" || fm.TLSServerName != "" || fm.TLSInsecureSkipVerify) {
			return nil, nil, fmt.Errorf("%s: masters[%d]: tls_* options set but tls = false (set tls = true)", at(i, "tls_ca"), i)
		}
		if (fm.TLSCert == "") != (fm.TLSKey == "") {
			return nil, nil, fmt.Errorf("%s: masters[%d]: tls_cert and tls_key go together", at(i, "tls_cert"), i)
		}
		c.Masters = append(c.Masters, m)
	}
	if err := c.checkMasters(func(i int, key string) string {
		if i < 0 {
			return path
		}
		return at(i, key)
	}); err != nil {
		return nil, nil, err
	}
	warns := c.warnings()
	for i, m := range c.Masters {
		if m.PasswordLiteral {
			warns = append(warns, fmt.Sprintf("%s: masters[%d] (%s): literal password in the config file; prefer password_env or password_file", at(i, "password"), i, m.Name))
		}
	}
	return c, warns, nil
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
		if m.Addr == "" {
			return fmt.Errorf("%s: masters[%d]: addr is missing", where(i, "name"), i)
		}
		if !strings.Contains(m.Addr, ":") {
			return fmt.Errorf("%s: masters[%d].addr: %q has no port (want host:port)", where(i, "addr"), i, m.Addr)
		}
		if m.Name == "" {
			m.Name = fmt.Sprintf("m%d", i+1)
		}
		id := fmt.Sprintf("%s/%d", m.Addr, m.DB)
		if j, dup := addrs[id]; dup {
			return fmt.Errorf("%s: masters[%d].addr: duplicate address %q (also masters[%d])", where(i, "addr"), i, m.Addr, j)
		}
		if j, dup := names[m.Name]; dup {
			return fmt.Errorf("%s: masters[%d].name: duplicate name %q (also masters[%d])", where(i, "name"), i, m.Name, j)
		}
		names[m.Name], addrs[id] = i, i
	}
	return nil
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

// Pools dials nothing yet: it returns one pool per master with dial, read and write
// timeouts, AUTH and TLS from the config.
func (c *Config) Pools() ([]*redis.Pool, error) {
	pools := make([]*redis.Pool, 0, len(c.Masters))
	timeout := c.Inspect.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	for _, m := range c.Masters {
		opts := []redis.DialOption{
			redis.DialConnectTimeout(timeout),
			redis.DialReadTimeout(timeout),
			redis.DialWriteTimeout(timeout),
			redis.DialDatabase(m.DB),
		}
		if m.Username != "" {
			opts = append(opts, redis.DialUsername(m.Username))
		}
		if m.Password != "" {
			opts = append(opts, redis.DialPassword(m.Password))
		}
		if m.TLS {
			tc, err := tlsConfig(m)
			if err != nil {
				return nil, fmt.Errorf("master %s: %w", m.Name, err)
			}
			opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(tc), redis.DialTLSSkipVerify(m.TLSInsecureSkipVerify))
		}
		addr := m.Addr
		pools = append(pools, &redis.Pool{
			MaxIdle:     4,
			IdleTimeout: time.Minute,
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr, opts...)
			},
			TestOnBorrow: func(conn redis.Conn, idle time.Time) error {
				if time.Since(idle) < 10*time.Second {
					return nil
				}
				_, err := conn.Do("PING")
				return err
			},
		})
	}
	return pools, nil
}

func tlsConfig(m MasterConfig) (*tls.Config, error) {
	tc := &tls.Config{ServerName: m.TLSServerName, InsecureSkipVerify: m.TLSInsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if tc.ServerName == "" {
		if h, _, ok := strings.Cut(m.Addr, ":"); ok {
			tc.ServerName = h
		}
	}
	if m.TLSCA != "" {
		pem, err := os.ReadFile(m.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca %s: no PEM certificate found", m.TLSCA)
		}
		tc.RootCAs = pool
	}
	if m.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(m.TLSCert, m.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("tls_cert/tls_key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// LockOptions returns the redlock options the [lock] table asks for.
func (c *Config) LockOptions() []redlock.Option {
	opts := []redlock.Option{
		redlock.WithRetries(c.Lock.Retries),
		redlock.WithRetryDelay(c.Lock.RetryDelay),
		redlock.WithDriftFactor(c.Lock.DriftFactor),
		redlock.WithNodeTimeout(c.Lock.NodeTimeout),
	}
	if c.Lock.KeyPrefix != "" {
		opts = append(opts, redlock.WithKeyPrefix(c.Lock.KeyPrefix))
	}
	if c.Lock.Fencing {
		opts = append(opts, redlock.WithFencing())
	}
	return opts
}

// keyLines maps "table.key" (top level: "key"; masters entries by index) to the line
// where the key is written, from a light scan of the file.
type keyLines struct {
	top     map[string]int
	masters []map[string]int
}

var (
	reArrayTable = regexp.MustCompile(`^\s*\[\[\s*([^\]]+?)\s*\]\]`)
	reTable      = regexp.MustCompile(`^\s*\[\s*([^\]]+?)\s*\]`)
	reTypeErr    = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	reKey        = regexp.MustCompile(`^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-.]+)\s*=`)
)

func locateKeys(data []byte) *keyLines {
	kl := &keyLines{top: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	table, inMaster := "", -1
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := reArrayTable.FindStringSubmatch(line); m != nil {
			table = strings.TrimSpace(m[1])
			inMaster = -1
			if table == "masters" {
				kl.masters = append(kl.masters, map[string]int{"": n})
				inMaster = len(kl.masters) - 1
			}
			kl.setTop(table, n)
			continue
		}
		if m := reTable.FindStringSubmatch(line); m != nil {
			table, inMaster = strings.TrimSpace(m[1]), -1
			kl.setTop(table, n)
			continue
		}
		if m := reKey.FindStringSubmatch(line); m != nil {
			key := strings.Trim(m[1], `"'`)
			if inMaster >= 0 {
				if _, ok := kl.masters[inMaster][key]; !ok {
					kl.masters[inMaster][key] = n
				}
				continue
			}
			full := key
			if table != "" {
				full = table + "." + key
			}
			kl.setTop(full, n)
		}
	}
	return kl
}

func (kl *keyLines) setTop(k string, n int) {
	if _, ok := kl.top[k]; !ok {
		kl.top[k] = n
	}
}

// line returns the line of key (dotted, for index < 0) or of masters[index]'s key,
// falling back to the entry's [[masters]] header; 0 when unknown.
func (kl *keyLines) line(index int, key string) int {
	if index < 0 {
		return kl.top[key]
	}
	if index >= len(kl.masters) {
		return 0
	}
	if n, ok := kl.masters[index][key]; ok {
		return n
	}
	return kl.masters[index][""]
}

// firstUndecoded returns path:line of the first unknown key.
func (kl *keyLines) firstUndecoded(path string, keys []toml.Key) string {
	k := keys[0]
	if len(k) >= 2 && k[0] == "masters" {
		last := k[len(k)-1]
		for i := range kl.masters {
			if n, ok := kl.masters[i][last]; ok {
				return path + ":" + strconv.Itoa(n)
			}
		}
	}
	if n := kl.top[k.String()]; n > 0 {
		return path + ":" + strconv.Itoa(n)
	}
	return path
}
