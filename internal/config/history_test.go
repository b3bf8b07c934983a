package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfigHistoryURL(t *testing.T) {
	t.Setenv("REDLOCKCTL_TEST_PG_PW", "pg-env-secret")
	c, warns, err := Load(writeConfig(t, "[history]\nurl = \"postgres://rec@db.internal:5432/history?sslmode=require\"\npassword_env = \"REDLOCKCTL_TEST_PG_PW\"\nmax_age = \"30d\"\n"+threeMasters))
	if err != nil || len(warns) != 0 {
		t.Fatalf("%v %q", err, warns)
	}
	h := c.History
	if h.URL != "postgres://rec@db.internal:5432/history?sslmode=require" || h.Password != "pg-env-secret" || h.Dir != "" || h.MaxSize != 0 || h.PasswordEnv != "REDLOCKCTL_TEST_PG_PW" {
		t.Errorf("[history] url: %#v (password %q)", h, h.Password)
	}
	if got := c.SecretEnv(); len(got) != 1 || got[0] != "REDLOCKCTL_TEST_PG_PW" {
		t.Errorf("SecretEnv %q: want the database's password variable kept from run's command", got)
	}
	for _, s := range []string{fmt.Sprint(h), fmt.Sprintf("%+v", h), fmt.Sprintf("%#v", h), fmt.Sprintf("%v", c)} {
		if strings.Contains(s, "pg-env-secret") {
			t.Errorf("printed the password: %s", s)
		}
	}

	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("pg-file-secret\n"), 0o600)
	c, _, err = Load(writeConfig(t, "[history]\nurl = \"postgres://rec@db/history\"\npassword_file = \""+pwFile+"\"\n"+threeMasters))
	if err != nil || c.History.Password != "pg-file-secret" {
		t.Fatalf("password_file: %v %q", err, c.History.Password)
	}

	// A password written in the URL works, with a warning, and is taken out of it.
	c, warns, err = Load(writeConfig(t, "[history]\nurl = \"postgres://rec:in-url-secret@db/history\"\n"+threeMasters))
	if err != nil || c.History.Password != "in-url-secret" || strings.Contains(c.History.URL, "in-url-secret") || len(warns) != 1 || !strings.Contains(warns[0], "history.url: literal password") {
		t.Fatalf("a password in the URL: %v %q %q", err, c.History.URL, warns)
	}
	if strings.Contains(strings.Join(warns, " "), "in-url-secret") {
		t.Fatalf("the warning quotes the password: %q", warns)
	}
}

func TestLoadConfigHistoryURLErrors(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
		line             int
	}{
		{"not postgres", "[history]\nurl = \"mysql://rec:url-secret@db/h\"\n", `history.url: "mysql://rec:xxxxx@db/h" is not a PostgreSQL URL`, 2},
		{"does not parse", "[history]\nurl = \"postgres://rec:url-secret@[::1/h\"\n", "history.url: \"postgres://xxxxx@[::1/h\" is not a PostgreSQL URL", 2},
		{"max_size with url", "[history]\nmax_size = \"1GiB\"\nurl = \"postgres://rec@db/h\"\n", "history.max_size: does not apply with url: a PostgreSQL store is bounded by max_age alone", 2},
		{"dir with url", "[history]\nurl = \"postgres://rec@db/h\"\ndir = \"/var/lib/x\"\n", "history.dir: does not apply with url", 3},
		{"env not set", "[history]\nurl = \"postgres://rec@db/h\"\npassword_env = \"REDLOCKCTL_NOT_SET_ANYWHERE\"\n", "history.password_env: environment variable REDLOCKCTL_NOT_SET_ANYWHERE is not set", 3},
		{"two passwords", "[history]\nurl = \"postgres://rec:url-secret@db/h\"\npassword_env = \"HOME\"\n", "history.url: the URL has a password and so has password_env", 2},
		{"password parameter", "[history]\nurl = \"postgres://rec@db/h?password=url-secret\"\n", "history.url: the URL has a password parameter", 2},
		{"password without url", "[history]\npassword_env = \"HOME\"\n", "history.password_env: is the password of a PostgreSQL store: set url too", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body+threeMasters)
			_, _, err := Load(path)
			if err == nil {
				t.Fatal("loaded")
			}
			if want := fmt.Sprintf("%s:%d: %s", path, tt.line, tt.want); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q\nwant prefix %q", err, want)
			}
			if strings.Contains(err.Error(), "url-secret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
