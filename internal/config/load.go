package config

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// file mirrors the TOML layout; durations are strings parsed with positions.
type file struct {
	Name       string       `toml:"name"`
	LabelColor string       `toml:"label_color"`
	ReadOnly   bool         `toml:"read_only"`
	AuditLog   string       `toml:"audit_log"`
	Lock       fileLock     `toml:"lock"`
	Inspect    fileInspect  `toml:"inspect"`
	History    fileHistory  `toml:"history"`
	Masters    []fileMaster `toml:"masters"`
}

type fileHistory struct {
	Dir          string `toml:"dir"`
	MaxSize      string `toml:"max_size"`
	MaxAge       string `toml:"max_age"`
	URL          string `toml:"url"`
	PasswordEnv  string `toml:"password_env"`
	PasswordFile string `toml:"password_file"`
}

type fileLock struct {
	KeyPrefix    string  `toml:"key_prefix"`
	DefaultTTL   string  `toml:"default_ttl"`
	DriftFactor  float64 `toml:"drift_factor"`
	NodeTimeout  string  `toml:"node_timeout"`
	Retries      int     `toml:"retries"`
	RetryDelay   string  `toml:"retry_delay"`
	RestartGuard string  `toml:"restart_guard"`
	Fencing      bool    `toml:"fencing"`
}

type fileInspect struct {
	Patterns     []string    `toml:"patterns"`
	Resources    []string    `toml:"resources"`
	PollInterval string      `toml:"poll_interval"`
	ScanCount    int         `toml:"scan_count"`
	MaxKeys      int         `toml:"max_keys"`
	Timeout      string      `toml:"timeout"`
	MaxTTL       string      `toml:"max_ttl"`
	HealthEvery  int         `toml:"health_every"`
	Reconcile    string      `toml:"reconcile_interval"`
	Groups       []string    `toml:"groups"`
	MaxGroups    int         `toml:"max_groups"`
	Scopes       []fileScope `toml:"scopes"`
}

type fileScope struct {
	Pattern string `toml:"pattern"`
	Scope   string `toml:"scope"`
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

	// Topologies (checkForm in topology.go): a Sentinel group or a Redis Cluster instead of addr.
	// The lists are pointers so that an empty list is told apart from an absent one.
	Sentinels            *[]string `toml:"sentinels"`
	MasterName           string    `toml:"master_name"`
	SentinelUsername     string    `toml:"sentinel_username"`
	SentinelPassword     string    `toml:"sentinel_password"`
	SentinelPasswordEnv  string    `toml:"sentinel_password_env"`
	SentinelPasswordFile string    `toml:"sentinel_password_file"`
	Cluster              *[]string `toml:"cluster"`
}

// Load reads and checks the config file at path. Errors name path:line; the
// returned warnings are worth showing but do not stop anything.
func Load(path string) (*Config, []string, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	return parse(path, data, false)
}

// LoadWithMasters reads the config file at path like Load, then replaces its masters
// with addrs (the --masters flag on top of a file). The file may then have no
// [[masters]] at all; everything else in it still applies and is checked.
func LoadWithMasters(path string, addrs []string) (*Config, []string, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, _, err := parse(path, data, true)
	if err != nil {
		return nil, nil, err
	}
	if err := c.SetMasters(addrs); err != nil {
		return nil, nil, err
	}
	return c, c.warnings(), nil
}

// parse decodes and checks a config file; with mastersGiven the masters come from
// elsewhere, so an empty [[masters]] list is no error.
func parse(path string, data []byte, mastersGiven bool) (*Config, []string, error) {
	var f file
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, plainWords(pe.Message))
		}
		if m := reTypeErr.FindStringSubmatch(err.Error()); m != nil {
			return nil, nil, fmt.Errorf("%s:%s: %s: %s", path, m[1], m[2], plainTypeError(m[2], m[3]))
		}
		return nil, nil, fmt.Errorf("%s: %s", path, plainWords(err.Error()))
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
	if def("audit_log") {
		c.AuditLog, c.AuditLogDefault = f.AuditLog, false
		if f.AuditLog == "off" {
			c.AuditLog = "" // explicitly none
		}
	}
	c.Lock.KeyPrefix = f.Lock.KeyPrefix
	c.Lock.Fencing = f.Lock.Fencing
	if def("history", "dir") {
		switch f.History.Dir {
		case "off":
			c.History.Dir = ""
		case "":
			return nil, nil, fmt.Errorf("%s: history.dir: empty (a directory, or \"off\" to record nothing)", at(-1, "history.dir"))
		default:
			c.History.Dir = f.History.Dir
		}
	}
	if def("history", "max_size") {
		n, err := ParseSize(f.History.MaxSize)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: history.max_size: %v", at(-1, "history.max_size"), err)
		}
		c.History.MaxSize = n
	}
	if def("history", "max_age") {
		d, err := parseDays(f.History.MaxAge)
		if err != nil || d <= 0 {
			return nil, nil, fmt.Errorf("%s: history.max_age: bad duration %q (want e.g. \"14d\", \"36h\")", at(-1, "history.max_age"), f.History.MaxAge)
		}
		c.History.MaxAge = d
	}
	historyWarn, err := historyDatabase(f.History, &c.History, def, at)
	if err != nil {
		return nil, nil, err
	}

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
		dur(def("lock", "restart_guard"), f.Lock.RestartGuard, "lock.restart_guard", &c.Lock.RestartGuard, true),
		dur(def("inspect", "poll_interval"), f.Inspect.PollInterval, "inspect.poll_interval", &c.Inspect.PollInterval, false),
		dur(def("inspect", "timeout"), f.Inspect.Timeout, "inspect.timeout", &c.Inspect.Timeout, false),
		dur(def("inspect", "max_ttl"), f.Inspect.MaxTTL, "inspect.max_ttl", &c.Inspect.MaxTTL, false),
		dur(def("inspect", "reconcile_interval"), f.Inspect.Reconcile, "inspect.reconcile_interval", &c.Inspect.ReconcileInterval, false),
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
		posInt(def("inspect", "max_groups"), f.Inspect.MaxGroups, "inspect.max_groups", &c.Inspect.MaxGroups),
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
	for _, g := range f.Inspect.Groups {
		if strings.TrimSpace(g) == "" {
			return nil, nil, fmt.Errorf("%s: inspect.groups: an empty group", at(-1, "inspect.groups"))
		}
		for _, w := range strings.Fields(g) {
			if strings.ContainsAny(w, "*?[") {
				if err := CheckGlob(w); err != nil {
					return nil, nil, fmt.Errorf("%s: inspect.groups: %q: %v", at(-1, "inspect.groups"), g, err)
				}
			}
		}
	}
	c.Inspect.Groups = f.Inspect.Groups
	for i, fs := range f.Inspect.Scopes {
		rule, err := checkScope(fs)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: inspect.scopes[%d]: %v", lines.entryAt(path, "inspect.scopes", i), i, err)
		}
		c.Inspect.Scopes = append(c.Inspect.Scopes, rule)
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
		if IsURL(fm.Addr) {
			if err := fromFileURL(i, fm, &m, n > 0); err != nil {
				return nil, nil, fmt.Errorf("%s: masters[%d].addr: %v", at(i, "addr"), i, err)
			}
			fm.Addr, fm.DB, fm.TLS = m.Addr, m.DB, m.TLS
		}
		switch {
		case fm.Password != "":
			m.Password, m.PasswordLiteral = fm.Password, true
		case fm.PasswordEnv != "":
			v, ok := os.LookupEnv(fm.PasswordEnv)
			if !ok {
				return nil, nil, fmt.Errorf("%s: masters[%d].password_env: environment variable %s is not set", at(i, "password_env"), i, fm.PasswordEnv)
			}
			m.Password, m.PasswordEnv = v, fm.PasswordEnv
			m.SecretEnv = append(m.SecretEnv, fm.PasswordEnv)
		case fm.PasswordFile != "":
			pw, err := readSecret(fm.PasswordFile)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: masters[%d].password_file: %v", at(i, "password_file"), i, err)
			}
			m.Password, m.PasswordFile = pw, fm.PasswordFile
		}
		if err := checkForm(i, fm, &m, at); err != nil {
			return nil, nil, err
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
	if mastersGiven && len(c.Masters) == 0 {
		return c, nil, nil
	}
	if err := c.checkMasters(func(i int, key string) string {
		if i < 0 {
			return path
		}
		return at(i, key)
	}); err != nil {
		return nil, nil, err
	}
	warns := append(c.warnings(), historyWarn...)
	for i, m := range c.Masters {
		if m.PasswordLiteral {
			warns = append(warns, fmt.Sprintf("%s: masters[%d] (%s): literal password in the config file; prefer password_env or password_file", at(i, "password"), i, m.Name))
		}
	}
	return c, warns, nil
}

// keyLines maps "table.key" (top level: "key"; masters entries by index) to the line
// where the key is written, from a light scan of the file.
type keyLines struct {
	top     map[string]int
	masters []map[string]int
	// arrays holds the header line of each entry of the other arrays of tables
	// ("inspect.scopes"), in order.
	arrays map[string][]int
}

var (
	reArrayTable = regexp.MustCompile(`^\s*\[\[\s*([^\]]+?)\s*\]\]`)
	reTable      = regexp.MustCompile(`^\s*\[\s*([^\]]+?)\s*\]`)
	reTypeErr    = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	reKey        = regexp.MustCompile(`^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-.]+)\s*=`)
)

func locateKeys(data []byte) *keyLines {
	kl := &keyLines{top: map[string]int{}, arrays: map[string][]int{}}
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
			} else {
				kl.arrays[table] = append(kl.arrays[table], n)
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

// entryAt returns path:line of entry i of the array of tables name (its header line).
func (kl *keyLines) entryAt(path, name string, i int) string {
	if lines := kl.arrays[name]; i < len(lines) {
		return path + ":" + strconv.Itoa(lines[i])
	}
	return path
}

// checkScope checks one [[inspect.scopes]] entry: a non-empty pattern whose globs are
// valid and that does not name the state (a scope decides the state), and a known scope.
func checkScope(fs fileScope) (ScopeRule, error) {
	if strings.TrimSpace(fs.Pattern) == "" {
		return ScopeRule{}, errors.New("pattern is empty (want a filter such as \"billing:*\" or \"lib:redis-py\")")
	}
	if !slices.Contains(ScopeNames, fs.Scope) {
		return ScopeRule{}, fmt.Errorf("scope %q: want one of %s", fs.Scope, strings.Join(ScopeNames, ", "))
	}
	for _, w := range strings.Fields(fs.Pattern) {
		if f, _, ok := strings.Cut(w, ":"); ok && strings.EqualFold(f, "state") {
			return ScopeRule{}, fmt.Errorf("pattern %q: a scope decides the state, so state: cannot choose it", fs.Pattern)
		}
		if strings.ContainsAny(w, "*?[") {
			if err := CheckGlob(w); err != nil {
				return ScopeRule{}, fmt.Errorf("pattern %q: %v", fs.Pattern, err)
			}
		}
	}
	return ScopeRule{Pattern: fs.Pattern, Scope: fs.Scope}, nil
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

// ParseSize reads a size in bytes: a number with an optional unit, KiB, MiB, GiB,
// TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), as in "1GiB" or "500MB".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	unit := strings.TrimSpace(t[i:])
	mult := map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[unit]
	if err != nil || mult == 0 || v <= 0 || v*mult > 1<<62 {
		return 0, fmt.Errorf("bad size %q (want e.g. \"1GiB\", \"500MB\")", s)
	}
	return int64(v * mult), nil
}

// parseDays is time.ParseDuration that also takes whole days: "14d", "1d12h".
func parseDays(s string) (time.Duration, error) {
	var days time.Duration
	if d, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, err
		}
		days = time.Duration(n) * 24 * time.Hour
		if rest == "" {
			return days, nil
		}
		s = rest
	}
	v, err := time.ParseDuration(s)
	return days + v, err
}
