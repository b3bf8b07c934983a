package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFromURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want MasterConfig
	}{
		{"redis://127.0.0.1:7001", MasterConfig{Name: "127.0.0.1:7001", Addr: "127.0.0.1:7001"}},
		{"redis://:s3cr3t-pw@10.0.0.1:6380/2", MasterConfig{Name: "10.0.0.1:6380", Addr: "10.0.0.1:6380", Password: "s3cr3t-pw", DB: 2}},
		{"rediss://ops:pw@lock.example:6379", MasterConfig{Name: "lock.example:6379", Addr: "lock.example:6379", Username: "ops", Password: "pw", TLS: true}},
		{"redis://lock.example", MasterConfig{Name: "lock.example:6379", Addr: "lock.example:6379"}},
		{"redis://[::1]:7001/0", MasterConfig{Name: "[::1]:7001", Addr: "[::1]:7001"}},
	} {
		got, err := FromURL(tc.in)
		if err != nil || got.Name != tc.want.Name || got.Addr != tc.want.Addr || got.Username != tc.want.Username ||
			got.Password != tc.want.Password || got.DB != tc.want.DB || got.TLS != tc.want.TLS {
			t.Errorf("%s: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
	}
	// Bad URLs: the error says what is wrong and never shows the password.
	for _, in := range []string{"redis://:s3cr3t-pw@h:99999", "redis://:s3cr3t-pw@h:1/x", "redis://:s3cr3t-pw@h:1/0?timeout=1", "redis://:s3cr3t-pw@", "redis://:s3cr3t-pw@h%zz:1"} {
		_, err := FromURL(in)
		if err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v", in, err)
		}
	}
	c, _, err := FromAddrs([]string{"redis://:s3cr3t-pw@127.0.0.1:7001/1", "127.0.0.1:7002", "rediss://127.0.0.1:7003"})
	if err != nil || c.Masters[0].Password != "s3cr3t-pw" || c.Masters[0].DB != 1 || c.Masters[0].Name != "127.0.0.1:7001" ||
		c.Masters[1].Addr != "127.0.0.1:7002" || !c.Masters[2].TLS {
		t.Fatalf("FromAddrs: %+v %v", c, err)
	}
	if s := c.Masters[0].String() + c.Masters[0].GoString(); strings.Contains(s, "s3cr3t") {
		t.Errorf("a master prints its password: %s", s)
	}
}

// [[masters]] addr may be a URL; its password is a literal password (warned about),
// and a part given twice is an error naming file:line.
func TestFileURL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.toml")
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[[masters]]\naddr = \"redis://ops:s3cr3t-pw@127.0.0.1:7001/3\"\n[[masters]]\naddr = \"127.0.0.1:7002\"\n[[masters]]\naddr = \"127.0.0.1:7003\"\n")
	c, warns, err := Load(path)
	if err != nil || c.Masters[0].Addr != "127.0.0.1:7001" || c.Masters[0].Username != "ops" || c.Masters[0].Password != "s3cr3t-pw" || c.Masters[0].DB != 3 {
		t.Fatalf("%+v %v", c, err)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "literal password") || strings.Contains(strings.Join(warns, "\n"), "s3cr3t") {
		t.Errorf("warnings %q", warns)
	}
	write("[[masters]]\naddr = \"redis://:s3cr3t-pw@127.0.0.1:7001\"\npassword_env = \"X\"\n")
	if _, _, err := Load(path); err == nil || !strings.Contains(err.Error(), "c.toml:2: masters[0].addr: the URL has a password and so does the entry") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("password twice: %v", err)
	}
}

// Scrub removes a secret cut short by a server, and what a server echoes of a refused
// AUTH, wherever it stands in a message.
func TestScrubRunsOfSecrets(t *testing.T) {
	long := strings.Repeat("Kx9!pQ2w", 25) + "tail"
	c := &Config{Masters: []MasterConfig{{Password: long}, {Password: "short"}, {SentinelPassword: "sentinel-secret-77"}}}
	for _, in := range []string{
		"ERR unknown command 'AUTH', with args beginning with: 'user' '" + long[:116] + "'",
		"wrong pass " + long[30:60] + " and more",
		"NOAUTH short and sentinel-secret-77 and entinel-secret",
	} {
		out := c.Scrub(in)
		for i := 0; i+MinSecretRun <= len(long); i++ {
			if strings.Contains(out, long[i:i+MinSecretRun]) {
				t.Fatalf("Scrub(%q) = %q keeps a run of the password", in, out)
			}
		}
		if strings.Contains(out, "short") || strings.Contains(out, "-secret") {
			t.Errorf("Scrub(%q) = %q", in, out)
		}
	}
	if got := c.Scrub("ERR unknown command 'FOO', with args beginning with: 'bar'"); got != "ERR unknown command 'FOO', with args beginning with: 'bar'" {
		t.Errorf("an ordinary error changed: %q", got)
	}
}

func TestSecretEnvNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	t.Setenv("PW_A", "a-secret")
	body := "[[masters]]\naddr = \"127.0.0.1:7001\"\npassword_env = \"PW_A\"\n[[masters]]\naddr = \"127.0.0.1:7002\"\npassword_env = \"PW_A\"\n[[masters]]\naddr = \"127.0.0.1:7003\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := Load(path)
	if err != nil || strings.Join(c.SecretEnv(), ",") != "PW_A" {
		t.Fatalf("%v %v", c.SecretEnv(), err)
	}
}
