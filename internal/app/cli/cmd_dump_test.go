package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

func dump(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDumpExitCodes(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true}) // AOF fsync always: fresh masters are no finding
	masters := strings.Join(redistest.Addrs(ms), ",")
	hex := "0123456789abcdef0123456789abcdef"

	code, out, errOut := dump(t, "dump", "--masters", masters)
	if code != exitOK || !strings.Contains(out, "masters up 3/3") || !strings.Contains(out, "0 resources") {
		t.Fatalf("clean masters: exit %d\n%s%s", code, out, errOut)
	}
	for _, m := range ms {
		m.Do("SET", "billing:nightly", "web-1:42#"+hex, "PX", 60000)
	}
	if code, out, _ = dump(t, "dump", "--masters", masters); code != exitOK || !strings.Contains(out, "billing:nightly  held") {
		t.Fatalf("held lock: exit %d\n%s", code, out)
	}
	ms[0].Do("SET", "split", "a#"+hex, "PX", 60000)
	ms[1].Do("SET", "split", "b#"+hex, "PX", 60000)
	if code, out, _ = dump(t, "dump", "--masters", masters); code != exitFindings || !strings.Contains(out, "\nsplit ") {
		t.Fatalf("split lock: exit %d, want 3\n%s", code, out)
	}
	// --filter and --only narrow the rows and the exit code with them.
	if code, out, _ = dump(t, "dump", "--masters", masters, "--filter", "billing:*"); code != exitOK || strings.Contains(out, "\nsplit ") {
		t.Errorf("--filter billing:*: exit %d\n%s", code, out)
	}
	if code, out, _ = dump(t, "dump", "--masters", masters, "--only", "anomalies"); code != exitFindings || strings.Contains(out, "billing:nightly") || !strings.Contains(out, "\nsplit ") {
		t.Errorf("--only anomalies: exit %d\n%s", code, out)
	}
	code, out, _ = dump(t, "dump", "--masters", masters, "-o", "json")
	var snap struct {
		Quorum    int `json:"quorum"`
		Resources []struct {
			Resource string `json:"resource"`
			State    string `json:"state"`
			Owner    string `json:"owner"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &snap); err != nil || code != exitFindings || snap.Quorum != 2 || len(snap.Resources) != 2 || snap.Resources[0].Owner != "web-1:42" {
		t.Errorf("-o json: exit %d, %v, %+v", code, err, snap)
	}
	code, out, _ = dump(t, "dump", "--masters", masters, "-o", "ndjson", "--watch", "20ms", "--count", "3")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitFindings || len(lines) != 3 {
		t.Errorf("ndjson --watch --count 3: exit %d, %d lines", code, len(lines))
	}

	ms[2].Kill()
	if code, out, _ = dump(t, "dump", "--masters", masters, "--filter", "billing:*"); code != exitFindings || !strings.Contains(out, "DOWN") {
		t.Errorf("one master down: exit %d, want 3\n%s", code, out)
	}
	ms[1].Kill()
	if code, out, _ = dump(t, "dump", "--masters", masters); code != exitFailure || !strings.Contains(out, "no-quorum") {
		t.Errorf("two of three down: exit %d, want 1\n%s", code, out)
	}
}

func TestDumpUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[inspect]\npoll_interval = \"soon\"\n[[masters]]\naddr = \"127.0.0.1:1\"\n"), 0o600)
	t.Setenv("REDLOCKCTL_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Chdir(dir)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"dump", "-o", "xml", "--masters", "127.0.0.1:1"}, `-o "xml"`},
		{[]string{"dump", "--only", "errors", "--masters", "127.0.0.1:1"}, `--only "errors"`},
		{[]string{"dump", "--config", bad}, bad + ":2: inspect.poll_interval: bad duration"},
		{[]string{"dump", "--config", filepath.Join(dir, "missing.toml")}, "missing.toml"},
		{[]string{"dump"}, "no config"},
		{[]string{"dump", "--masters", "127.0.0.1:1,127.0.0.1:1"}, "duplicate address"},
		{[]string{"doctor", "--interval", "0", "--masters", "127.0.0.1:1"}, "--interval"},
		{[]string{"dump", "stray-argument", "--masters", "127.0.0.1:1"}, "unexpected argument"},
		{[]string{"dump", "--no-live", "--masters", "127.0.0.1:1"}, "--no-live goes with --watch"},
		{[]string{"dump", "--filter", "job[", "--masters", "127.0.0.1:1"}, `--filter: "job[": pattern "job[": '[' at 3 is never closed`},
	} {
		code, _, errOut := dump(t, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
}

func TestDoctor(t *testing.T) {
	good := redistest.StartN(t, 2, redistest.Options{AOF: true})
	evicting := redistest.Start(t, redistest.Options{AOF: true, Config: []string{"maxmemory 10mb", "maxmemory-policy allkeys-lru"}})
	masters := strings.Join(redistest.Addrs(good), ",")

	cfg := filepath.Join(t.TempDir(), "config.toml")
	body := "[inspect]\nmax_ttl = \"1s\"\n"
	for i, a := range append(redistest.Addrs(good), evicting.Addr) {
		body += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, a)
	}
	os.WriteFile(cfg, []byte(body), 0o600)

	code, out, errOut := dump(t, "doctor", "--config", cfg, "--duration", "2500ms", "--interval", "100ms")
	if code != exitFindings || !strings.Contains(out, "evicting-policy") || !strings.Contains(out, "fix: set maxmemory-policy noeviction") {
		t.Errorf("doctor with an evicting master: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "ppm") {
		t.Errorf("doctor did not measure clock rates over --duration:\n%s", out)
	}
	// Two masters: an even count is a finding, and the config warns about it.
	code, out, errOut = dump(t, "doctor", "--masters", masters, "--duration", "0", "-o", "json")
	var snap struct {
		Findings []struct{ Code, Fix string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &snap); err != nil || code != exitFindings || len(snap.Findings) != 1 || snap.Findings[0].Code != "even-masters" || snap.Findings[0].Fix == "" {
		t.Errorf("doctor on 2 masters: exit %d %v %+v", code, err, snap)
	}
	if !strings.Contains(errOut, "even number") {
		t.Errorf("no even-N warning on stderr: %q", errOut)
	}
}

// A one-shot dump builds its rows while it writes them, a chunk at a time; --watch
// writes whole snapshots. Both print the same rows, summary and exit code, in every
// format and with every filter, across several chunks of rows: keys without a TTL
// (so that two polls read the same), split and partial rows, and node-redlock values
// that hold several keys (whose note needs every row).
func TestDumpOnceMatchesWholeSnapshot(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true})
	masters := strings.Join(redistest.Addrs(ms), ",")
	// The findings are part of what must match, so none may depend on the moment: a
	// round trip near lock.node_timeout (rtt-high) is one on a loaded machine, and a
	// node_timeout of 10s keeps it out. The clock findings need more than one sample.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[lock]\nnode_timeout = \"10s\"\ndefault_ttl = \"60s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hex := "0123456789abcdef0123456789abcdef"
	for mi, m := range ms {
		c := m.Pool.Get()
		for i := range 10000 {
			v := fmt.Sprintf("w%d#%s", i, hex)
			switch {
			case i%1000 == 1:
				v = hex // one node-redlock lock over many resources
			case i%1000 == 2:
				v = fmt.Sprintf("w%d#%s", mi, hex) // split
			case i%1000 == 3 && mi == 0:
				continue // partial
			}
			c.Send("SET", fmt.Sprintf("job:%05d", i), v)
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		for range 10000 - 10*boolInt(mi == 0) {
			if _, err := c.Receive(); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	}
	// Everything after the masters: the rows, the summary and the findings.
	rowsOf := func(format, out string) string {
		if format == "table" {
			_, rest, _ := strings.Cut(out, "\nRESOURCE ")
			return rest
		}
		_, rest, _ := strings.Cut(out, `,"resources":`)
		return rest
	}
	for _, format := range []string{"json", "ndjson", "table"} {
		for _, filter := range [][]string{nil, {"--filter", "job:0*"}, {"--only", "anomalies"}, {"--filter", "nothing*"}} {
			args := append([]string{"dump", "--config", cfg, "--masters", masters, "-o", format}, filter...)
			code, once, errOut := dump(t, args...)
			wcode, whole, _ := dump(t, append(args, "--watch", "1ms", "--count", "1")...)
			if format == "table" {
				whole = strings.TrimSuffix(whole, "\n") // --watch separates snapshots with a blank line
			}
			got, want := rowsOf(format, once), rowsOf(format, whole)
			if code != wcode || got != want || len(want) < 10 {
				t.Fatalf("%v: exit %d vs %d with --watch; output differs (%d vs %d bytes)%s\n%s", args, code, wcode, len(got), len(want), firstDiff(got, want), errOut)
			}
		}
	}
	_, out, _ := dump(t, "dump", "--masters", masters, "-o", "json")
	if !strings.Contains(out, "the same value holds 10 keys") || !strings.Contains(out, `"resources":10000`) {
		t.Errorf("the shared value or the row count is missing:\n%.600s", out)
	}
	// Output that cannot be written (a closed pipe, a full disk) stops the dump with a
	// runtime failure that says so, whichever chunk it happens in.
	for _, format := range []string{"json", "table"} {
		for _, after := range []int{0, 50 << 10, 500 << 10} {
			w := &failAfter{n: after}
			var errOut bytes.Buffer
			code := run([]string{"dump", "--masters", masters, "-o", format}, w, &errOut)
			if code != exitFailure || !strings.Contains(errOut.String(), "write: disk full") {
				t.Errorf("-o %s, writes failing after %d bytes: exit %d, stderr %q", format, after, code, errOut.String())
			}
		}
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		f.n = 0
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The table's footer counts every row it shows by its state, single-instance locks
// too (said apart), and agrees in number.
func TestDumpFooterCountsSingleInstance(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	body := "[[inspect.scopes]]\npattern = \"solo*\"\nscope = \"single\"\n"
	for _, a := range redistest.Addrs(ms) {
		body += "[[masters]]\naddr = \"" + a + "\"\n"
	}
	os.WriteFile(cfg, []byte(body), 0o600)
	for i, k := range []string{"solo-a", "solo-b"} {
		if _, err := ms[i].Do("SET", k, "w:1#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		if _, err := m.Do("SET", "shared", "w:2#0123456789abcdef0123456789abcdef", "PX", 60000); err != nil {
			t.Fatal(err)
		}
	}
	_, out, errOut := dump(t, "dump", "--config", cfg)
	if !strings.Contains(out, "\n3 resources: 3 held, 0 partial, 0 split, 0 no-ttl, 0 foreign, 0 free (2 of them single-instance); 0 findings\n") {
		t.Errorf("footer:\n%s%s", out, errOut)
	}
	if _, err := ms[0].Do("DEL", "solo-a"); err != nil {
		t.Fatal(err)
	}
	_, out, _ = dump(t, "dump", "--config", cfg)
	if !strings.Contains(out, "\n2 resources: 2 held, 0 partial, 0 split, 0 no-ttl, 0 foreign, 0 free (1 of them single-instance); 0 findings\n") {
		t.Errorf("footer:\n%s", out)
	}
}

// doctor --duration on a terminal says what it waits for, each second, and clears the
// line before the report; off a terminal it writes nothing of it.
func TestDoctorProgress(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true})
	masters := strings.Join(redistest.Addrs(ms), ",")
	_, _, errOut := dump(t, "doctor", "--masters", masters, "--duration", "1500ms")
	if strings.Contains(errOut, "sampling") {
		t.Errorf("progress off a terminal: %q", errOut)
	}
	stderrIsTerminal = func(io.Writer) bool { return true }
	defer func() { stderrIsTerminal = isTerminal }()
	_, out, errOut := dump(t, "doctor", "--masters", masters, "--duration", "2500ms")
	want := regexp.MustCompile(`^\rredlockctl doctor: sampling the masters' clocks: 0s of 2\.5s \(interrupt to stop\)\x1b\[K` +
		`(\rredlockctl doctor: sampling the masters' clocks: [12]s of 2\.5s \(interrupt to stop\)\x1b\[K)*\r\x1b\[K$`)
	if !want.MatchString(errOut) || !strings.Contains(out, "masters") {
		t.Errorf("progress on a terminal: %q\n%s", errOut, out)
	}
}

// firstDiff shows where a and b first differ, with some context either side ("" when
// they do not).
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return ""
	}
	from := max(i-120, 0)
	return fmt.Sprintf(" at byte %d:\n  once:  %q\n  watch: %q", i, a[from:min(i+120, len(a))], b[from:min(i+120, len(b))])
}

// `dump --watch` follows the live feed (real masters): once the feed is up, a snapshot
// reads only the keys that changed, never scanning, and still shows a release and a
// new lock made behind its back. With --no-live, every snapshot scans.
func TestDumpWatchFollowsTheFeed(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true}) // fresh masters are no finding
	masters := strings.Join(redistest.Addrs(ms), ",")
	hex := "0123456789abcdef0123456789abcdef"
	for _, m := range ms {
		for i := range 200 {
			m.Do("SET", fmt.Sprintf("lock:k%d", i), "w#"+hex, "PX", 600000)
		}
	}
	scans := func() int64 {
		v, err := ms[0].Do("INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`cmdstat_scan:calls=(\d+)`).FindStringSubmatch(string(v.([]byte)))
		if m == nil {
			return 0
		}
		var n int64
		fmt.Sscan(m[1], &n)
		return n
	}
	for _, live := range []bool{true, false} {
		// With the feed: until its first whole read is in (slow on a loaded machine),
		// every snapshot scans; then snapshots stop scanning. 8 snapshots in a row
		// without a SCAN say it is up; 8 more after the change must scan nothing.
		// Without it: every snapshot scans.
		args := []string{"dump", "--masters", masters, "-o", "ndjson", "--watch", "150ms", "--count", "60"}
		if !live {
			args = append(args, "--no-live", "--count", "16")
		}
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() { done <- run(args, &out, &errOut) }()
		lines := func() int { return strings.Count(out.String(), "\n") }
		waitLines := func(n int) {
			for deadline := time.Now().Add(30 * time.Second); lines() < n; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("live %v: %d snapshots in 30 s, want %d\n%s", live, lines(), n, errOut.String())
				}
			}
		}
		if live {
			for quiet, from, at := 0, scans(), lines(); quiet < 8; {
				waitLines(at + 1)
				if at = lines(); at > 40 {
					t.Fatalf("the feed never came up: no 8 snapshots in a row without a SCAN in the first %d\n%s", at, errOut.String())
				}
				if now := scans(); now != from {
					quiet, from = 0, now
				} else {
					quiet++
				}
			}
		} else {
			waitLines(8)
		}
		before, at := scans(), lines()
		for _, m := range ms {
			m.Do("DEL", "lock:k1")
			m.Do("SET", "lock:new", "n#"+hex, "PX", 600000)
		}
		waitLines(at + 8)
		scanned := scans() - before
		written := out.String()
		all := strings.Split(written[:strings.LastIndexByte(written, '\n')], "\n") // whole lines: it writes on
		last := all[len(all)-1]
		if !strings.Contains(last, `"resource":"lock:new"`) || strings.Contains(last, `"resource":"lock:k1"`) {
			t.Errorf("live %v: the last snapshot does not show lock:k1 released and lock:new held", live)
		}
		if live && scanned != 0 {
			t.Errorf("with the live feed up: %d SCANs in the 8 snapshots after the change, want none (only changed keys read)", scanned)
		}
		if !live && scanned < 8 {
			t.Errorf("--no-live: %d SCANs in the 8 snapshots after the change, want one or more each", scanned)
		}
		if code := <-done; code != exitOK {
			t.Errorf("live %v: exit %d, want 0\n%s", live, code, errOut.String())
		}
		if errOut.String() != "" {
			t.Errorf("live %v: stderr %q", live, errOut.String())
		}
	}
}
