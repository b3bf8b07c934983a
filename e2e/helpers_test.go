package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/internal/app/cli"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// Exit codes the tests expect (internal/exitcode defines them for the binary).
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitFindings = 3
)

// run runs redlockctl in this process, as the binary would with args.
func run(args []string, stdout, stderr io.Writer) int { return cli.Run(args, stdout, stderr) }

// dump runs redlockctl dump in this process and returns its exit code, stdout and
// stderr.
func dump(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	code := run(append([]string{"dump"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeConfig writes body as a test's config file and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustDo(t *testing.T, s *redistest.Server, cmd string, args ...any) {
	t.Helper()
	if _, err := s.Do(cmd, args...); err != nil {
		t.Fatalf("%s %s: %v", s.Addr, cmd, err)
	}
}

// tmuxSession is one detached tmux server running one command in a 120×40 pane.
type tmuxSession struct{ socket string }

var tmuxCount int

func startTmux(t testing.TB, command string) *tmuxSession {
	t.Helper()
	return startTmuxSize(t, 120, 40, command)
}

// startTmuxSize is startTmux with a pane of width×height.
func startTmuxSize(t testing.TB, width, height int, command string) *tmuxSession {
	t.Helper()
	tmuxCount++
	tm := &tmuxSession{socket: fmt.Sprintf("redlockctl-e2e-%d-%d", os.Getpid(), tmuxCount)}
	shell := command + `; echo "exit status $?"; sleep 60`
	tm.run(t, "-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "-s", "main",
		"env", "TERM=xterm-256color", "sh", "-c", shell)
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmuxSession) run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (tm *tmuxSession) keys(t testing.TB, keys ...string) {
	t.Helper()
	tm.run(t, append([]string{"send-keys", "-t", "main"}, keys...)...)
}

func (tm *tmuxSession) literal(t testing.TB, s string) {
	t.Helper()
	tm.run(t, "send-keys", "-t", "main", "-l", s)
}

func (tm *tmuxSession) capture(t testing.TB) string {
	t.Helper()
	return tm.run(t, "capture-pane", "-p", "-t", "main")
}

func (tm *tmuxSession) captureANSI(t testing.TB) string {
	t.Helper()
	return tm.run(t, "capture-pane", "-p", "-e", "-t", "main")
}

// waitFor polls the pane until it shows every want, and returns it; it fails the test
// with the last screen after 30 s.
func (tm *tmuxSession) waitFor(t testing.TB, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		screen := tm.capture(t)
		missing := ""
		for _, w := range want {
			if !strings.Contains(screen, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console never showed %q; last screen:\n%s", missing, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// showsWithin reports whether the screen shows want within d.
func (tm *tmuxSession) showsWithin(t testing.TB, d time.Duration, want string) bool {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if strings.Contains(tm.capture(t), want) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colourSGR returns the first SGR sequence of s that sets a colour, "" if none.
func colourSGR(s string) string {
	for _, m := range sgr.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			n, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			if (n >= 30 && n <= 38) || (n >= 40 && n <= 48) || (n >= 90 && n <= 97) || (n >= 100 && n <= 107) {
				return m[0]
			}
		}
	}
	return ""
}

// commandStats returns, per master, calls per command from INFO commandstats.
func commandStats(t testing.TB, servers []*redistest.Server) []map[string]int64 {
	t.Helper()
	out := make([]map[string]int64, len(servers))
	for i, s := range servers {
		info, err := redis.String(s.Do("INFO", "commandstats"))
		if err != nil {
			t.Fatalf("%s: INFO commandstats: %v", s.Addr, err)
		}
		out[i] = map[string]int64{}
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok || !strings.HasPrefix(name, "cmdstat_") {
				continue
			}
			var n int64
			for _, field := range strings.Split("calls="+rest, ",") {
				k, v, _ := strings.Cut(field, "=")
				if k == "calls" || k == "rejected_calls" || k == "failed_calls" {
					x, _ := strconv.ParseInt(v, 10, 64)
					n += x
				}
			}
			out[i][strings.TrimPrefix(name, "cmdstat_")] = n
		}
	}
	return out
}

// keyReads counts, from INFO commandstats, the TYPE commands the masters served
// since before (commandStats): each of the live feed's key reads sends one, and no
// workload of the benchmarks does.
func keyReads(t testing.TB, servers []*redistest.Server, before []map[string]int64) int64 {
	var n int64
	for i, m := range commandStats(t, servers) {
		n += m["type"] - before[i]["type"]
	}
	return n
}

// dirtyCounts returns each master's rdb_changes_since_last_save: it grows with every
// write that changes data.
func dirtyCounts(t *testing.T, servers []*redistest.Server) []int64 {
	t.Helper()
	out := make([]int64, len(servers))
	for i, s := range servers {
		info, err := redis.String(s.Do("INFO", "persistence"))
		if err != nil {
			t.Fatalf("%s: INFO persistence: %v", s.Addr, err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "rdb_changes_since_last_save:"); ok {
				out[i], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return out
}

// isWrite says whether a command (or container|subcommand) carries the server's
// "write" or "may_replicate" flag. Script calls are left to the ACL LOG check: what a
// script runs is checked against the user's rights command by command.
func isWrite(t *testing.T, s *redistest.Server, cmd string) bool {
	t.Helper()
	switch cmd {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "script|load":
		return false
	}
	reply, err := redis.Values(s.Do("COMMAND", "INFO", cmd))
	if err != nil || len(reply) == 0 || reply[0] == nil {
		t.Fatalf("COMMAND INFO %s: %v %v", cmd, reply, err)
	}
	doc, err := redis.Values(reply[0], nil)
	if err != nil || len(doc) < 3 {
		t.Fatalf("COMMAND INFO %s: %v", cmd, err)
	}
	flags, _ := redis.Strings(doc[2], nil)
	for _, f := range flags {
		if f == "write" || f == "may_replicate" {
			return true
		}
	}
	return false
}

// logged collects a child process's stderr (and stdout).
type logged struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logged) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startLogged starts cmd with its output collected; t.Cleanup kills it if it still
// runs, and so does the kernel if the test process dies first.
func startLogged(t testing.TB, cmd *exec.Cmd) *logged {
	t.Helper()
	l := &logged{}
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.buf.WriteString(sc.Text() + "\n")
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		w.Close()
	})
	return l
}

// waitFor waits up to 60 s (the machine may be loaded) for a line matching re and
// returns its first group.
func (l *logged) waitFor(t testing.TB, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := re.FindStringSubmatch(l.text()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output after 60s:\n%s", re, l.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitHTTP(t *testing.T, u string, l *logged) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 60s (%v); output:\n%s", u, err, l.text())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventually retries check (which returns "" when satisfied, else what is wrong)
// until it passes or within has passed.
func eventually(t *testing.T, within time.Duration, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, within, msg)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", u, err, b)
	}
}

// promValue runs an instant query that should return one sample.
func promValue(t *testing.T, api, query string) (float64, bool) {
	t.Helper()
	var resp struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	getJSON(t, api+"/api/v1/query?query="+url.QueryEscape(query), &resp)
	if len(resp.Data.Result) != 1 || len(resp.Data.Result[0].Value) != 2 {
		return 0, false
	}
	s, _ := resp.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// promCount runs a count() query; no result counts as 0.
func promCount(t *testing.T, api, query string) float64 {
	t.Helper()
	v, ok := promValue(t, api, query)
	if !ok {
		return 0
	}
	return v
}
