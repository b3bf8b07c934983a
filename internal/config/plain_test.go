package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goWords are what would show a Go type in a message meant for an operator.
var goWords = regexp.MustCompile(`int64|float64|interface \{\}|\[\]|map\[|destination|incompatible types|slice|toml: `)

// Every config error names the file, the line and the key, says in plain words what is
// wanted with an example, and names no Go type.
func TestConfigErrorsInPlainWords(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{"[inspect]\npoll_interval = 5\n", `c.toml:2: inspect.poll_interval: got a whole number; want a duration in quotes, such as "1s"`},
		{"[inspect]\nmax_keys = \"10\"\n", "c.toml:2: inspect.max_keys: got text in quotes; want a whole number without quotes, such as 1000"},
		{"read_only = \"yes\"\n", "c.toml:1: read_only: got text in quotes; want true or false"},
		{"[inspect]\npatterns = \"lock:*\"\n", `c.toml:2: inspect.patterns: got text in quotes; want a list of strings, such as ["lock:*"]`},
		{"[lock]\ndrift_factor = \"0.01\"\n", "c.toml:2: lock.drift_factor: got text in quotes; want a number without quotes, such as 0.01"},
		{"[[masters]]\naddr = 7001\n", `c.toml:2: masters.addr: got a whole number; want "host:port" in quotes`},
		{"masters = 3\n", "c.toml:1: masters: got a whole number; want [[masters]] tables"},
		{"[inspect]\nresources = [1,2]\n", "c.toml:2: inspect.resources: got a whole number; want a list of strings"},
		{"[lock]\nretries = 1.5\n", "c.toml:2: lock.retries: got a number with a fraction; want a whole number"},
		{"[lock]\nretries = 99999999999999999999\n", "c.toml:2"},
		{"[inspect\n", "c.toml:2"},
		{"[inspect]\ntimeout = \"5\"\n", `c.toml:2: inspect.timeout: bad duration "5" (want e.g. "500ms", "30s")`},
	} {
		path := filepath.Join(dir, "c.toml")
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(path)
		if err == nil {
			t.Errorf("%q: no error", tc.body)
			continue
		}
		msg := strings.TrimPrefix(err.Error(), dir+"/")
		if !strings.HasPrefix(msg, tc.want) {
			t.Errorf("%q:\n got %s\nwant %s...", tc.body, msg, tc.want)
		}
		if goWords.MatchString(msg) {
			t.Errorf("%q: the message names a Go type: %s", tc.body, msg)
		}
	}
}

// A file over 1 MiB, or nested deeper than a few levels, is refused before decoding:
// the decoder's cost grows steeply with nesting (a 40 KB file nested 10,000 deep took
// seconds and gigabytes).
func TestConfigRefusedBeforeDecoding(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Errorf("a file over 1 MiB: %v", err)
	}
	deep := filepath.Join(dir, "deep.toml")
	body := "name = \"x\"\nx = " + strings.Repeat("{a = ", 10000) + "1" + strings.Repeat("}", 10000) + "\n"
	if err := os.WriteFile(deep, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(deep); err == nil || !strings.Contains(err.Error(), "deep.toml:2: arrays or inline tables nested deeper than 16") {
		t.Errorf("nested 10,000 deep: %v", err)
	}
	// Brackets inside strings and comments do not count; a real config loads.
	ok := filepath.Join(dir, "ok.toml")
	if err := os.WriteFile(ok, []byte("# [[[[[[[[[[[[[[[[[[[[ \nname = \"{{{{{{{{{{{{{{{{{{{{{{{\"\naudit_log = '/tmp/[[[[[[[[[[[[[[[[[[[['\n[[masters]]\naddr = \"127.0.0.1:7001\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(ok); err != nil {
		t.Errorf("brackets in strings and comments: %v", err)
	}
}

// A password file holds one line; a file of several is refused without quoting it.
func TestPasswordFileOneLine(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(path, []byte("[[masters]]\naddr = \"127.0.0.1:7001\"\npassword_file = \""+secret+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "holds more than one line") || strings.Contains(err.Error(), "PRIVATE") || strings.Contains(err.Error(), "MIIE") {
		t.Errorf("a multi-line password file: %v", err)
	}
	if err := os.WriteFile(secret, []byte("s3cr3t-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := Load(path)
	if err != nil || c.Masters[0].Password != "s3cr3t-pw" {
		t.Errorf("a one-line password file: %v", err)
	}
}
