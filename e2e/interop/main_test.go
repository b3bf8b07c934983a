package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// Built once per test run by TestMain.
var (
	binDir     string
	redlockctl string // the redlockctl binary
	goClient   string // testdata/go: redsync and bsm/redislock
	setupErr   error  // why the tools above are missing; every test fails with it
)

const (
	nodeDir   = "testdata/node"
	pythonBin = "/usr/bin/python3" // Debian's python3-redis serves this interpreter only
	pyScript  = "testdata/python/lock.py"
	phpScript = "testdata/php/lock.php"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redlockctl-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// The default audit log (admin actions without audit_log) goes here, not home.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	redlockctl = filepath.Join(dir, "redlockctl")
	goClient = filepath.Join(dir, "interop-go")
	setupErr = setup()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// setup builds redlockctl and the Go clients (concurrently) and checks that the node
// clients, redis-py and Symfony Lock and Semaphore are installed; `make deps` installs
// them.
func setup() error {
	var wg sync.WaitGroup
	errs := make([]error, 5)
	run := func(i int, dir string, name string, args ...string) {
		defer wg.Done()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			errs[i] = fmt.Errorf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
		}
	}
	wg.Add(4)
	go run(4, ".", "php", "-r", "require '/usr/share/php/Symfony/Component/Lock/autoload.php'; require '/usr/share/php/Symfony/Component/Semaphore/autoload.php'; new Redis();")
	go run(0, "../..", "go", "build", "-o", redlockctl, ".")
	go run(1, "testdata/go", "go", "build", "-o", goClient, ".")
	go run(2, ".", pythonBin, "-c", "import redis")
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "redis-semaphore", "package.json")); err != nil {
		wg.Add(1)
		go run(3, nodeDir, "npm", "ci", "--no-audit", "--no-fund")
	}
	wg.Wait()
	return errors.Join(errs...)
}

func needTools(t *testing.T) {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("interop tools missing (run `make deps`): %v", setupErr)
	}
}

// masters starts n real redis-servers with AOF fsync always, so that fresh masters are
// no doctor finding and a healthy lock leaves dump with exit 0.
func masters(t *testing.T, n int) ([]*redistest.Server, string) {
	t.Helper()
	needTools(t)
	ms := redistest.StartN(t, n, redistest.Options{AOF: true})
	return ms, strings.Join(redistest.Addrs(ms), ",")
}

// cli runs the redlockctl binary as a user would, with no config file in reach, and
// returns its exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, redlockctl, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), "XDG_CONFIG_HOME="+cmd.Dir, "HOME="+cmd.Dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("redlockctl %s: %v", strings.Join(args, " "), err)
	}
	return 0, out.String(), errb.String()
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDLOCKCTL_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// snapshot is the part of `dump -o json` these tests read.
type snapshot struct {
	Quorum   int       `json:"quorum"`
	Findings []anomaly `json:"findings"`
	Masters  []struct {
		Name     string    `json:"name"`
		Up       bool      `json:"up"`
		Error    string    `json:"error"`
		Findings []anomaly `json:"findings"`
	} `json:"masters"`
	Stderr    string     `json:"-"`
	Resources []resource `json:"resources"`
	Summary   struct {
		Held  int `json:"held"`
		NoTTL int `json:"no_ttl"`
	} `json:"summary"`
}

type resource struct {
	Resource  string    `json:"resource"`
	Key       string    `json:"key"`
	State     string    `json:"state"`
	Value     string    `json:"value"`
	Owner     string    `json:"owner"`
	Holders   int       `json:"holders"`
	Library   string    `json:"library"`
	Kind      string    `json:"kind"`
	Evidence  string    `json:"library_evidence"`
	Anomalies []anomaly `json:"anomalies"`
	Scope     string    `json:"scope"`
	Instances []string  `json:"instances"`
	Permits   int       `json:"permits"`
	Available *int      `json:"available_permits"`
	Raw       json.RawMessage
}

type anomaly struct {
	Code    string `json:"code"`
	Master  string `json:"master"`
	Message string `json:"message"`
}

// writeConfig writes a config file over the masters at addrs, as an operator would,
// with timeouts that leave room for a loaded machine and an audit log beside it.
func writeConfig(t *testing.T, addrs string) (config, audit string) {
	t.Helper()
	var masters strings.Builder
	for i, a := range strings.Split(addrs, ",") {
		fmt.Fprintf(&masters, "[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, a)
	}
	return writeConfigMasters(t, masters.String())
}

// writeClusterConfig is writeConfig for one Redis Cluster, found through its seeds.
func writeClusterConfig(t *testing.T, seeds []string) (config, audit string) {
	t.Helper()
	quoted := make([]string, len(seeds))
	for i, s := range seeds {
		quoted[i] = strconv.Quote(s)
	}
	return writeConfigMasters(t, fmt.Sprintf("[[masters]]\nname = \"cluster\"\ncluster = [%s]\n", strings.Join(quoted, ", ")))
}

// writeConfigMasters writes a config with the given [[masters]] tables and an audit log
// beside it.
func writeConfigMasters(t *testing.T, masters string) (config, audit string) {
	t.Helper()
	dir := t.TempDir()
	config, audit = filepath.Join(dir, "config.toml"), filepath.Join(dir, "audit.log")
	var b strings.Builder
	fmt.Fprintf(&b, "name = \"interop\"\naudit_log = %q\n[lock]\nrestart_guard = \"0s\"\nnode_timeout = \"500ms\"\n[inspect]\ntimeout = \"3s\"\n", audit)
	b.WriteString(masters)
	if err := os.WriteFile(config, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, audit
}

// dump runs `redlockctl dump -o json` on the masters at addrs and decodes its snapshot.
func dump(t *testing.T, addrs string) (int, snapshot) {
	t.Helper()
	config, _ := writeConfig(t, addrs)
	code, out, errOut := cli(t, "dump", "-o", "json", "--config", config)
	var snap snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("dump -o json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	var raw struct {
		Resources []json.RawMessage `json:"resources"`
	}
	_ = json.Unmarshal([]byte(out), &raw)
	snap.Stderr = errOut
	for i := range snap.Resources {
		if i < len(raw.Resources) {
			snap.Resources[i].Raw = raw.Resources[i]
		}
	}
	return code, snap
}

// find returns the row of key, failing the test when there is none.
func (s snapshot) find(t *testing.T, key string) resource {
	t.Helper()
	for _, r := range s.Resources {
		if r.Key == key {
			return r
		}
	}
	var keys []string
	for _, r := range s.Resources {
		keys = append(keys, r.Key)
	}
	t.Fatalf("no row for key %q; rows: %q", key, keys)
	return resource{}
}

// rows lists every row's key, state, library and anomalies, for failure messages.
func (s snapshot) rows() string {
	var b strings.Builder
	for _, m := range s.Masters {
		fmt.Fprintf(&b, "  master %s: up %v error %q findings %+v\n", m.Name, m.Up, m.Error, m.Findings)
	}
	if s.Stderr != "" {
		fmt.Fprintf(&b, "  stderr: %s\n", s.Stderr)
	}
	for _, r := range s.Resources {
		fmt.Fprintf(&b, "  %s: %s %s holders %d anomalies %+v\n", r.Key, r.State, r.Library, r.Holders, r.Anomalies)
	}
	return b.String()
}

// dropAnomaly removes every anomaly with code from the rows and reports whether there
// was one.
func (s snapshot) dropAnomaly(code string) bool {
	found := false
	for i := range s.Resources {
		kept := s.Resources[i].Anomalies[:0]
		for _, a := range s.Resources[i].Anomalies {
			if a.Code == code {
				found = true
				continue
			}
			kept = append(kept, a)
		}
		s.Resources[i].Anomalies = kept
	}
	return found
}

func (s snapshot) has(key string) bool {
	for _, r := range s.Resources {
		if r.Key == key {
			return true
		}
	}
	return false
}

// client is one running lock client (a harness process) that prints JSON events.
type client struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan map[string]any
	stderr *bytes.Buffer
	done   chan struct{}
}

// startClient starts a harness process. It is stopped (stdin closed, then killed) by
// t.Cleanup when the test has not stopped it.
func startClient(t *testing.T, name string, args ...string) *client {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = cleanEnv()
	c := &client{name: filepath.Base(name) + " " + strings.Join(args, " "), cmd: cmd, events: make(chan map[string]any, 16), stderr: new(bytes.Buffer), done: make(chan struct{})}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.name, err)
	}
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				c.events <- ev
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// next waits up to d for the client's next event and fails unless it is want.
func (c *client) next(t *testing.T, want string, d time.Duration) map[string]any {
	t.Helper()
	select {
	case ev, ok := <-c.events:
		if !ok {
			<-c.done
			t.Fatalf("%s exited (%v) before %q; stderr:\n%s", c.name, c.cmd.ProcessState, want, c.stderr)
		}
		if ev["event"] != want {
			t.Fatalf("%s: event %v, want %q; stderr:\n%s", c.name, ev, want, c.stderr)
		}
		return ev
	case <-time.After(d):
		t.Fatalf("%s: no %q within %v; stderr:\n%s", c.name, want, d, c.stderr)
	}
	return nil
}

// quiet fails when the client reports anything within d.
func (c *client) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-c.events:
		if ok {
			t.Fatalf("%s: unexpected event %v", c.name, ev)
		}
	case <-time.After(d):
	}
}

// stop closes stdin (the clients' signal to release and exit) and waits for the exit.
func (c *client) stop(t *testing.T) {
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func str(ev map[string]any, k string) string {
	s, _ := ev[k].(string)
	return s
}
