package cli

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/history"
	"github.com/redlockctl/redlockctl/history/pgtest"
	"github.com/redlockctl/redlockctl/inspect/live"
)

// historyStore records two lifecycles of billing:nightly (the second expired) and
// one of jobs:a into a store in dir, in a session from t0 to t0+10s, with a feed
// gap from t0+6s to t0+7s.
func historyStore(t *testing.T, dir string, t0 time.Time) {
	t.Helper()
	s, err := history.Open(dir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeHistory(t, s, t0)
}

// writeHistory writes historyStore's records to s.
func writeHistory(t *testing.T, s history.Backend, t0 time.Time) {
	t.Helper()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ms := func(v float64) *float64 { return &v }
	err := s.Write(history.Batch{
		Ended: []history.Lifecycle{
			{Resource: "billing:nightly", Key: "billing:nightly", Value: "w1#00112233445566778899aabbccddeeff", Owner: "w1", Library: "redlockctl",
				Masters: 3, Quorum: 2, AcquiredAt: at(time.Second), EndedAt: at(3 * time.Second), End: history.Released, TTLMs: 30000, MarginMs: ms(28000)},
			{Resource: "billing:nightly", Key: "billing:nightly", Value: "w2#ffeeddccbbaa99887766554433221100", Owner: "w2", Library: "redlockctl",
				Masters: 3, Quorum: 2, AcquiredAt: at(4 * time.Second), EndedAt: at(5 * time.Second), End: history.Expired, TTLMs: 1000},
			{Resource: "jobs:a", Key: "jobs:a", Value: "x", Masters: 3, Quorum: 2, AcquiredAt: at(2 * time.Second), EndedAt: at(8 * time.Second), End: history.Released},
		},
		Marks: []history.Mark{
			{Kind: history.MarkSession, At: t0, To: at(10 * time.Second)},
			{Kind: history.MarkGap, At: at(6 * time.Second), To: at(7 * time.Second), Master: "m2", Text: "EOF"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHistoryCommand(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	historyStore(t, dir, t0)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[history]\ndir = \""+dir+"\"\n\n[[masters]]\naddr = \"127.0.0.1:1\"\n"), 0o600)
	stamp := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339Nano) }
	srv := httptest.NewServer(nil)
	srv.Close() // a port nothing answers on

	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string // substrings of stdout
		err  string   // substring of stderr
	}{
		{"at a hold", []string{"billing:nightly", "--at", stamp(2 * time.Second)}, exitOK, []string{"at " + t0.Add(2*time.Second).UTC().Format("2006-01-02T15:04:05.000Z") + ": 1 held", "w1#00112233445566778899aabbccddeeff", "released"}, ""},
		{"before any hold", []string{"billing:nightly", "--at", stamp(500 * time.Millisecond)}, exitOK, []string{": 0 held"}, ""},
		{"in a gap", []string{"--at", stamp(6500 * time.Millisecond)}, exitFindings, []string{"unknown: feed gap from", "on m2"}, ""},
		{"nothing recorded", []string{"--at", stamp(-time.Minute)}, exitFindings, []string{"unknown: nothing recorded before"}, ""},
		{"expired", []string{"--since", stamp(0), "--until", stamp(5500 * time.Millisecond), "--expired"}, exitOK, []string{"1 lifecycle\n", "w2#ffeeddccbbaa99887766554433221100", "expired"}, ""},
		{"expired over a gap", []string{"--since", "2h", "--expired"}, exitFindings, []string{"1 lifecycle\n", "w2#", "feed gap on m2", "nothing recorded from"}, ""},
		{"longer than", []string{"--since", "2h", "--longer-than", "3s"}, exitFindings, []string{"1 lifecycle\n", "jobs:a", "feed gap on m2 from"}, ""},
		{"glob", []string{"billing:*", "--since", stamp(0), "--until", stamp(5 * time.Second)}, exitOK, []string{"2 lifecycles"}, ""},
		{"filter", []string{"--since", stamp(0), "--until", stamp(5 * time.Second), "--filter", "owner:w2"}, exitOK, []string{"1 lifecycle\n", "w2#"}, ""},
		{"no question", []string{"billing:nightly"}, exitUsage, nil, "say what to answer"},
		{"at and since", []string{"--at", "-1h", "--since", "2h"}, exitUsage, nil, "--at names the holders at one instant"},
		{"bad time", []string{"--at", "yesterday"}, exitUsage, nil, `--at: "yesterday": not a time`},
		{"bad duration", []string{"--since", "2h", "--longer-than", "long"}, exitUsage, nil, "--longer-than"},
		{"until before since", []string{"--since", stamp(5 * time.Second), "--until", stamp(time.Second)}, exitUsage, nil, "is before --since"},
		{"bad format", []string{"--at", "-1h", "-o", "prometheus"}, exitUsage, nil, "want table, json or ndjson"},
		{"server down", []string{"--at", "-1h", "--server", srv.URL}, exitFailure, nil, "--server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append([]string{"history", "--config", cfg}, tc.args...), &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errOut.String())
			}
			for _, want := range tc.out {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out.String())
				}
			}
			if !strings.Contains(errOut.String(), tc.err) {
				t.Errorf("stderr lacks %q:\n%s", tc.err, errOut.String())
			}
		})
	}

	// ndjson: one lifecycle a line, through --server as from the store.
	s, err := history.Open(dir, history.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(history.Handler(s))
	defer api.Close()
	defer s.Close()
	var out, errOut bytes.Buffer
	if code := run([]string{"history", "billing:*", "--since", stamp(0), "--until", stamp(5500 * time.Millisecond), "-o", "ndjson", "--server", api.URL}, &out, &errOut); code != exitOK {
		t.Fatalf("--server: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("ndjson: %d lines, want 2:\n%s", len(lines), out.String())
	}
	var l struct {
		Resource, Value, End string
		HoldMs               float64 `json:"hold_ms"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &l); err != nil || l.End != live.Expired || l.HoldMs != 1000 || l.Value != "w2#ffeeddccbbaa99887766554433221100" {
		t.Errorf("ndjson line %s: %+v %v", lines[1], l, err)
	}
}

// TestHistoryCommandOnPostgreSQL: with [history] url, history reads the database
// (the password from password_env), with the same answers as from a directory.
func TestHistoryCommandOnPostgreSQL(t *testing.T) {
	srv := pgtest.Start(t)
	u := srv.NewDatabase()
	s, err := history.OpenPG(u, pgtest.Password, history.PGOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	writeHistory(t, s, t0)
	s.Close()
	t.Setenv("REDLOCKCTL_TEST_HISTORY_PW", pgtest.Password)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[history]\nurl = \""+u+"\"\npassword_env = \"REDLOCKCTL_TEST_HISTORY_PW\"\n\n[[masters]]\naddr = \"127.0.0.1:1\"\n"), 0o600)
	stamp := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"billing:nightly", "--at", stamp(2 * time.Second)}, exitOK, "w1#00112233445566778899aabbccddeeff"},
		{[]string{"--at", stamp(6500 * time.Millisecond)}, exitFindings, "unknown: feed gap from"},
		{[]string{"--since", stamp(0), "--until", stamp(5500 * time.Millisecond), "--expired"}, exitOK, "w2#ffeeddccbbaa99887766554433221100"},
	} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"history", "--config", cfg}, tc.args...), &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%q: exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, out.String(), errOut.String())
		}
	}
	// A wrong password: a clear failure, and the password never shown.
	t.Setenv("REDLOCKCTL_TEST_HISTORY_PW", "wrong-pw-7731")
	var out, errOut bytes.Buffer
	if code := run([]string{"history", "--config", cfg, "--at", "-1h"}, &out, &errOut); code != exitFailure ||
		!strings.Contains(errOut.String(), "password authentication failed") || strings.Contains(errOut.String(), "wrong-pw-7731") {
		t.Errorf("wrong password: exit %d\n%s", code, errOut.String())
	}
}
