package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const threeMasters = `
[[masters]]
name = "a"
addr = "127.0.0.1:7001"

[[masters]]
name = "b"
addr = "127.0.0.1:7002"

[[masters]]
name = "c"
addr = "127.0.0.1:7003"
`

func TestLoadConfigExample(t *testing.T) {
	c, warns, err := Load("../../config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings on the example config: %v", warns)
	}
	if len(c.Masters) != 5 || c.Quorum() != 3 || c.Lock.DefaultTTL != 30*time.Second || c.Inspect.Timeout != 500*time.Millisecond {
		t.Errorf("example config: %+v", c)
	}
	if len(c.LockOptions()) < 4 {
		t.Errorf("lock options: %d", len(c.LockOptions()))
	}
	pools, err := c.Pools()
	if err != nil || len(pools) != 5 {
		t.Fatalf("pools: %v %d", err, len(pools))
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	c, _, err := Load(writeConfig(t, "[lock]\nkey_prefix = \"lock:\"\n"+threeMasters))
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.Lock.DefaultTTL != d.Lock.DefaultTTL || c.Lock.DriftFactor != d.Lock.DriftFactor || c.Lock.NodeTimeout != d.Lock.NodeTimeout ||
		c.Inspect.ScanCount != d.Inspect.ScanCount || c.Inspect.MaxKeys != d.Inspect.MaxKeys || c.Inspect.PollInterval != d.Inspect.PollInterval ||
		c.Inspect.MaxTTL != d.Inspect.MaxTTL || c.Name != DefaultName {
		t.Errorf("defaults not applied: %+v", c)
	}
	if len(c.Inspect.Patterns) != 1 || c.Inspect.Patterns[0] != "lock:*" {
		t.Errorf("patterns %v, want the key prefix glob", c.Inspect.Patterns)
	}
	if c.Resource("lock:billing") != "billing" || c.Key("billing") != "lock:billing" {
		t.Errorf("prefix mapping wrong")
	}
}

// [[inspect.scopes]] entries are kept in order, first match first.
func TestLoadConfigScopes(t *testing.T) {
	c, _, err := Load(writeConfig(t, "[[inspect.scopes]]\npattern = \"billing:*\"\nscope = \"single\"\n\n[[inspect.scopes]]\npattern = \"lib:redis-py\"\nscope = \"redlock\"\n"+threeMasters))
	if err != nil {
		t.Fatal(err)
	}
	want := []ScopeRule{{"billing:*", "single"}, {"lib:redis-py", "redlock"}}
	if fmt.Sprint(c.Inspect.Scopes) != fmt.Sprint(want) {
		t.Errorf("scopes %v, want %v", c.Inspect.Scopes, want)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	t.Setenv("REDLOCKCTL_TEST_PW", "s3cret-from-env")
	tests := []struct {
		name string
		body string
		want string // substring of the error, which must also name path:line
		line int
	}{
		{"syntax", "name = \"x\nlabel_color = 1\n" + threeMasters, "", 1},
		{"unknown top key", "nmae = \"x\"\n" + threeMasters, `unknown key "nmae"`, 1},
		{"unknown table key", "[inspect]\npoll_intervall = \"1s\"\n" + threeMasters, `unknown key "inspect.poll_intervall"`, 2},
		{"unknown master key", threeMasters + "pasword = \"x\"\n", `unknown key "masters.pasword"`, 13},
		{"bad duration", "[lock]\n\ndefault_ttl = \"30 seconds\"\n" + threeMasters, "lock.default_ttl: bad duration", 3},
		{"negative duration", "[inspect]\ntimeout = \"-1s\"\n" + threeMasters, "inspect.timeout: must be positive", 2},
		{"zero reconcile interval", "[inspect]\n\nreconcile_interval = \"0s\"\n" + threeMasters, "inspect.reconcile_interval: must be positive", 3},
		{"bad reconcile interval", "[inspect]\nreconcile_interval = \"hourly\"\n" + threeMasters, "inspect.reconcile_interval: bad duration", 2},
		{"wrong type", "[inspect]\nscan_count = \"many\"\n" + threeMasters, "inspect.scan_count: got text in quotes; want a whole number", 2},
		{"unknown label colour", "name = \"prod\"\nlabel_color = \"rde\"\n" + threeMasters, `label_color: unknown colour "rde"`, 2},
		{"drift factor the library refuses", "[lock]\ndrift_factor = 0.6\n" + threeMasters, "lock.drift_factor: want 0 <= x < 0.5", 2},
		{"unclosed pattern", "[inspect]\npatterns = [\"lock:[ab\"]\n" + threeMasters, "never closed", 2},
		{"nothing to inspect", "[inspect]\npatterns = []\n" + threeMasters, "nothing would be inspected", 2},
		{"drift factor", "[lock]\ndrift_factor = 1.5\n" + threeMasters, "lock.drift_factor", 2},
		{"zero max_keys", "[inspect]\nmax_keys = 0\n" + threeMasters, "inspect.max_keys: must be > 0", 2},
		{"history size", "[history]\nmax_size = \"1 gigabyte\"\n" + threeMasters, `history.max_size: bad size "1 gigabyte"`, 2},
		{"history age", "[history]\n\nmax_age = \"two weeks\"\n" + threeMasters, `history.max_age: bad duration "two weeks"`, 3},
		{"history dir", "[history]\ndir = \"\"\n" + threeMasters, `history.dir: empty`, 2},
		{"unknown scope", "[[inspect.scopes]]\npattern = \"a:*\"\nscope = \"single\"\n\n[[inspect.scopes]]\npattern = \"b:*\"\nscope = \"singel\"\n" + threeMasters, `inspect.scopes[1]: scope "singel": want one of redlock, single`, 5},
		{"empty scope pattern", "[[inspect.scopes]]\nscope = \"single\"\n" + threeMasters, "inspect.scopes[0]: pattern is empty", 1},
		{"scope by state", "[[inspect.scopes]]\npattern = \"state:held\"\nscope = \"single\"\n" + threeMasters, "cannot choose it", 1},
		{"bad scope glob", "[[inspect.scopes]]\npattern = \"a:[x\"\nscope = \"single\"\n" + threeMasters, "never closed", 1},
		{"no masters", "name = \"x\"\n", "no masters configured", 0},
		{"duplicate name", threeMasters + "\n[[masters]]\nname = \"a\"\naddr = \"127.0.0.1:7009\"\n", `duplicate name "a"`, 15},
		{"duplicate addr", threeMasters + "\n[[masters]]\nname = \"d\"\naddr = \"127.0.0.1:7002\"\n", `duplicate address "127.0.0.1:7002"`, 16},
		{"no port", "[[masters]]\nname = \"a\"\naddr = \"redis.internal\"\n", "has no port", 3},
		{"missing env var", "[[masters]]\naddr = \"127.0.0.1:7001\"\npassword_env = \"REDLOCKCTL_NOT_SET_ANYWHERE\"\n", "REDLOCKCTL_NOT_SET_ANYWHERE is not set", 3},
		{"unreadable password file", "[[masters]]\naddr = \"127.0.0.1:7001\"\npassword_file = \"/nonexistent/pw\"\n", "cannot read /nonexistent/pw", 3},
		{"two password sources", "[[masters]]\naddr = \"127.0.0.1:7001\"\npassword = \"x\"\npassword_env = \"REDLOCKCTL_TEST_PW\"\n", "only one of", 4},
		{"tls options without tls", "[[masters]]\naddr = \"127.0.0.1:7001\"\ntls_ca = \"/ca.pem\"\n", "tls = false", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			_, _, err := Load(path)
			if err == nil {
				t.Fatal("no error")
			}
			prefix := path
			if tt.line > 0 {
				prefix = fmt.Sprintf("%s:%d:", path, tt.line)
			}
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want prefix %q and %q", err, prefix, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error leaks a password: %q", err)
			}
		})
	}
}

func TestLoadConfigPasswordsAndWarnings(t *testing.T) {
	t.Setenv("REDLOCKCTL_TEST_PW", "s3cret-from-env")
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("s3cret-from-file\n"), 0o600)
	body := fmt.Sprintf(`[lock]
default_ttl = "100ms"
drift_factor = 0.2
node_timeout = "50ms"

[[masters]]
name = "a"
addr = "127.0.0.1:7001"
username = "locker"
password_env = "REDLOCKCTL_TEST_PW"

[[masters]]
name = "b"
addr = "127.0.0.1:7002"
password_file = %q

[[masters]]
name = "c"
addr = "127.0.0.1:7003"
password = "s3cret-literal"

[[masters]]
name = "d"
addr = "127.0.0.1:7004"
db = 2
`, pwFile)
	path := writeConfig(t, body)
	c, warns, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Masters[0].Password != "s3cret-from-env" || c.Masters[0].Username != "locker" ||
		c.Masters[1].Password != "s3cret-from-file" || !c.Masters[2].PasswordLiteral || c.Masters[3].DB != 2 {
		t.Errorf("passwords not resolved")
	}
	all := strings.Join(warns, "\n")
	for _, want := range []string{"even number", "leaves", fmt.Sprintf("%s:20: masters[2] (c): literal password", path)} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings %q lack %q", all, want)
		}
	}
	for _, s := range []string{all, fmt.Sprintf("%v %+v %#v", c, c, c.Masters)} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("a password is printed: %s", s)
		}
	}
}

func TestLoadConfigHistory(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	c, _, err := Load(writeConfig(t, threeMasters))
	if err != nil {
		t.Fatal(err)
	}
	if c.History != (HistoryConfig{Dir: "/state/redlockctl/history", MaxSize: 1 << 30, MaxAge: 14 * 24 * time.Hour}) {
		t.Errorf("default [history] %+v", c.History)
	}
	c, _, err = Load(writeConfig(t, "[history]\ndir = \"/var/lib/redlockctl/history\"\nmax_size = \"500MB\"\nmax_age = \"1d12h\"\n"+threeMasters))
	if err != nil {
		t.Fatal(err)
	}
	if c.History != (HistoryConfig{Dir: "/var/lib/redlockctl/history", MaxSize: 500e6, MaxAge: 36 * time.Hour}) {
		t.Errorf("[history] %+v", c.History)
	}
	c, _, err = Load(writeConfig(t, "[history]\ndir = \"off\"\n"+threeMasters))
	if err != nil || c.History.Dir != "" {
		t.Errorf("dir = \"off\": %+v, %v", c.History, err)
	}
}

func TestFromAddrs(t *testing.T) {
	c, warns, err := FromAddrs([]string{"127.0.0.1:1", " 127.0.0.1:2", "127.0.0.1:3"})
	if err != nil || len(c.Masters) != 3 || c.Masters[1].Name != "127.0.0.1:2" || len(warns) != 0 {
		t.Fatalf("FromAddrs: %v %+v %v", err, c, warns)
	}
	if _, _, err := FromAddrs([]string{"127.0.0.1:1", "127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "--masters") {
		t.Errorf("duplicate --masters: %v", err)
	}
	if _, _, err := FromAddrs(nil); err == nil {
		t.Errorf("empty --masters accepted")
	}
}

// A --masters entry without a port is port 6379, as redis-cli takes it.
func TestMastersDefaultPort(t *testing.T) {
	c, _, err := FromAddrs([]string{"127.0.0.1", "redis.internal", "::1", "[::2]", "10.0.0.1:7000"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.Masters {
		got = append(got, m.Name+"="+m.Addr)
	}
	want := "127.0.0.1:6379=127.0.0.1:6379 redis.internal:6379=redis.internal:6379 [::1]:6379=[::1]:6379 [::2]:6379=[::2]:6379 10.0.0.1:7000=10.0.0.1:7000"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	if _, _, err := FromAddrs([]string{"127.0.0.1", "127.0.0.1:6379"}); err == nil {
		t.Errorf("the same master with and without its default port: accepted twice")
	}
}

// Keys (the redlockctl-config(5) page) names every key of the file's schema, once.
func TestKeysDocumentTheSchema(t *testing.T) {
	var schema []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for f := range typ.Fields() {
			name := prefix + f.Tag.Get("toml")
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(name+".", ft)
				continue
			}
			schema = append(schema, name)
		}
	}
	walk("", reflect.TypeFor[file]())
	var keys []string
	for _, k := range Keys() {
		if k.Doc == "" || k.Type == "" {
			t.Errorf("%s.%s: no type or doc", k.Table, k.Name)
		}
		keys = append(keys, strings.TrimPrefix(k.Table+"."+k.Name, "."))
	}
	slices.Sort(schema)
	slices.Sort(keys)
	if !slices.Equal(schema, keys) {
		t.Errorf("Keys and the schema differ:\nschema %v\nkeys   %v", schema, keys)
	}
}
