package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mixedTopologies = `
[[masters]]
name = "m1"
addr = "127.0.0.1:7001"

[[masters]]
name = "m2"
sentinels = ["127.0.0.1:26379", "127.0.0.1:26380", "127.0.0.1:26381"]
master_name = "locks-2"
sentinel_username = "watcher"
sentinel_password_env = "REDLOCKCTL_TEST_SENTINEL_PW"

[[masters]]
name = "c1"
cluster = ["127.0.0.1:7101", "127.0.0.1:7102"]
`

func TestLoadConfigTopologies(t *testing.T) {
	t.Setenv("REDLOCKCTL_TEST_SENTINEL_PW", "s3cret-sentinel")
	c, warns, err := Load(writeConfig(t, mixedTopologies))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	kinds := []string{c.Masters[0].Kind(), c.Masters[1].Kind(), c.Masters[2].Kind()}
	if fmt.Sprint(kinds) != "[addr sentinel cluster]" || c.Quorum() != 2 {
		t.Errorf("kinds %v, quorum %d", kinds, c.Quorum())
	}
	m2 := c.Masters[1]
	if m2.MasterName != "locks-2" || len(m2.Sentinels) != 3 || m2.SentinelUsername != "watcher" || m2.SentinelPassword != "s3cret-sentinel" {
		t.Errorf("sentinel entry: %+v", m2)
	}
	if len(c.Masters[2].Cluster) != 2 {
		t.Errorf("cluster entry: %v", c.Masters[2].Cluster)
	}
	if got := c.Scrub("auth failed for s3cret-sentinel"); strings.Contains(got, "s3cret") {
		t.Errorf("Scrub left the sentinel password: %q", got)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", c.Masters, c.Masters, c.Masters, m2); strings.Contains(s, "s3cret") {
		t.Errorf("a sentinel password is printed: %s", s)
	}
	if w := m2.Where(); w != "sentinel locks-2 (127.0.0.1:26379,127.0.0.1:26380,127.0.0.1:26381)" {
		t.Errorf("Where: %q", w)
	}

	// One cluster alone is a set of one instance: quorum 1, no even-count warning.
	c, warns, err = Load(writeConfig(t, "[[masters]]\ncluster = [\"127.0.0.1:7101\"]\n"))
	if err != nil || c.Quorum() != 1 || len(warns) != 0 {
		t.Errorf("cluster alone: %v quorum %v warnings %v", err, c, warns)
	}
}

func TestLoadConfigTopologyErrors(t *testing.T) {
	t.Setenv("REDLOCKCTL_TEST_SENTINEL_PW", "s3cret-sentinel")
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("s3cret-file\n"), 0o600)
	const s3 = `sentinels = ["127.0.0.1:26379", "127.0.0.1:26380", "127.0.0.1:26381"]`
	tests := []struct {
		name, body, want string
		line             int
	}{
		{"addr and sentinels", "[[masters]]\naddr = \"127.0.0.1:7001\"\n" + s3 + "\nmaster_name = \"x\"\n", "addr and sentinels both set", 3},
		{"addr and cluster", "[[masters]]\naddr = \"127.0.0.1:7001\"\ncluster = [\"127.0.0.1:7101\"]\n", "addr and cluster both set", 3},
		{"sentinels and cluster", "[[masters]]\n" + s3 + "\nmaster_name = \"x\"\ncluster = [\"127.0.0.1:7101\"]\n", "sentinels and cluster both set", 4},
		{"sentinels without master_name", "[[masters]]\nname = \"g\"\n" + s3 + "\n", "sentinels without master_name", 3},
		{"master_name without sentinels", "[[masters]]\naddr = \"127.0.0.1:7001\"\nmaster_name = \"x\"\n", "master_name is set without sentinels", 3},
		{"sentinel password without sentinels", "[[masters]]\ncluster = [\"127.0.0.1:7101\"]\nsentinel_password_env = \"REDLOCKCTL_TEST_SENTINEL_PW\"\n", "sentinel_password_env is set without sentinels", 3},
		{"empty sentinels", "[[masters]]\nsentinels = []\nmaster_name = \"x\"\n", "masters[0].sentinels: empty list", 2},
		{"empty cluster", "[[masters]]\nname = \"c\"\ncluster = []\n", "masters[0].cluster: empty list", 3},
		{"empty address in a list", "[[masters]]\ncluster = [\"127.0.0.1:7101\", \"\"]\n", "empty address", 2},
		{"seed without port", "[[masters]]\ncluster = [\"redis.internal\"]\n", `"redis.internal" is not host:port`, 2},
		{"sentinel listed twice", "[[masters]]\nsentinels = [\"127.0.0.1:26379\", \"127.0.0.1:26379\"]\nmaster_name = \"x\"\n", "listed twice", 2},
		{"none of the forms", "[[masters]]\nname = \"x\"\nusername = \"u\"\n", "one of addr, sentinels + master_name, or cluster", 2},
		{"literal sentinel password", "[[masters]]\n" + s3 + "\nmaster_name = \"x\"\nsentinel_password = \"s3cret-literal\"\n", "use sentinel_password_env or sentinel_password_file", 4},
		{"two sentinel password sources", "[[masters]]\n" + s3 + "\nmaster_name = \"x\"\nsentinel_password_env = \"REDLOCKCTL_TEST_SENTINEL_PW\"\nsentinel_password_file = \"" + pw + "\"\n", "only one of sentinel_password_env", 4},
		{"sentinel password env unset", "[[masters]]\n" + s3 + "\nmaster_name = \"x\"\nsentinel_password_env = \"REDLOCKCTL_NOT_SET_ANYWHERE\"\n", "REDLOCKCTL_NOT_SET_ANYWHERE is not set", 4},
		{"sentinel password file unreadable", "[[masters]]\n" + s3 + "\nmaster_name = \"x\"\nsentinel_password_file = \"/nonexistent/pw\"\n", "cannot read /nonexistent/pw", 4},
		{"cluster with db", "[[masters]]\ncluster = [\"127.0.0.1:7101\"]\ndb = 3\n", "a Redis Cluster has only db 0", 3},
		{"same cluster twice", "[[masters]]\ncluster = [\"127.0.0.1:7101\"]\n[[masters]]\ncluster = [\"127.0.0.1:7102\", \"127.0.0.1:7101\"]\n", "127.0.0.1:7101 is also in masters[0]", 4},
		{"same group twice", "[[masters]]\n" + s3 + "\nmaster_name = \"x\"\n[[masters]]\nsentinels = [\"127.0.0.1:26381\"]\nmaster_name = \"x\"\n", "127.0.0.1:26381 is also in masters[0]", 5},
		{"plain addr is a cluster seed", "[[masters]]\ncluster = [\"127.0.0.1:7101\"]\n[[masters]]\naddr = \"127.0.0.1:7101\"\n", "is a cluster seed in masters[0]", 4},
		{"plain addr is a sentinel", "[[masters]]\n" + s3 + "\nmaster_name = \"x\"\n[[masters]]\naddr = \"127.0.0.1:26380\"\n", "is a sentinel in masters[0]", 5},
		{"unknown topology key", "[[masters]]\n" + s3 + "\nmastername = \"x\"\n", `unknown key "masters.mastername"`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			_, _, err := Load(path)
			if err == nil {
				t.Fatal("no error")
			}
			prefix := fmt.Sprintf("%s:%d:", path, tt.line)
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want prefix %q and %q", err, prefix, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error leaks a password: %q", err)
			}
		})
	}
}
