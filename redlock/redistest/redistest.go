// Package redistest starts real redis-server processes for tests, on free loopback
// ports in temporary directories, and injects faults into them: kill, pause (SIGSTOP),
// restart with or without data, a slow link, and a skewed wall clock. Besides single
// servers it starts whole topologies: a Sentinel-managed master/replica group
// (StartSentinelGroup) and a Redis Cluster (StartCluster), with failover and slot
// migration helpers.
//
// Every server is stopped and its directory removed by t.Cleanup. A test that needs a
// server fails (it never skips) when redis-server is not installed.
package redistest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Options configures a server. The zero value is a plain in-memory master.
type Options struct {
	Config   []string // extra redis.conf lines, e.g. "maxmemory 10mb"
	AOF      bool     // appendonly yes, appendfsync always
	Password string   // requirepass for the default user
	Users    []string // ACL SETUSER rules, e.g. "ro on >pw ~* +@read -@write"
	Skew     bool     // run under the clock shim, controlled by SetClock
	TLS      bool     // serve TLS only, requiring client certificates (see Server.TLS)
}

// Server is one redis-server child process. Its address stays the same across
// Kill and Restart.
type Server struct {
	Addr string      // 127.0.0.1:port
	Pool *redis.Pool // a pool for the default user (with the password, if any)
	Dir  string      // working directory: config, log, RDB and AOF files
	TLS  *TLSFiles   // certificates, with Options.TLS; Pool and Do use them

	t     testing.TB
	opts  Options
	port  int
	clock string // control file of the clock shim ("" without Skew)
	role  role   // plain server, sentinel, or cluster node
	bus   int    // cluster bus port (cluster nodes)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// role is what kind of process a Server runs.
type role int

const (
	rolePlain    role = iota
	roleSentinel      // redis-server --sentinel; its config file is written once (Sentinel rewrites it)
	roleCluster       // cluster-enabled node with its own bus port
	roleGroup         // data node of a Sentinel group; config written once (CONFIG REWRITE keeps REPLICAOF)
)

// Start starts one server and waits until it answers PING.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	return start(t, o, rolePlain)
}

func start(t testing.TB, o Options, r role) *Server {
	t.Helper()
	bin := serverBinary(t)
	s := &Server{t: t, opts: o, Dir: t.TempDir(), role: r}
	if o.TLS {
		var err error
		if s.TLS, err = writeTLSFiles(s.Dir); err != nil {
			t.Fatalf("redistest: TLS certificates: %v", err)
		}
	}
	if o.Skew {
		s.clock = filepath.Join(s.Dir, "clock")
		s.writeClock(time.Now(), 0, 1)
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		s.port, err = FreePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		os.Remove(filepath.Join(s.Dir, "redis.conf")) // a kept config names the port of a failed attempt
		if r == roleCluster {
			if s.bus, err = FreePort(); err != nil {
				t.Fatalf("redistest: %v", err)
			}
		}
		if err = s.start(bin); err == nil {
			break
		}
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s.Pool = s.NewPool("", o.Password)
	t.Cleanup(func() {
		s.Pool.Close()
		s.stop()
	})
	for _, rule := range o.Users {
		args := []any{"SETUSER"}
		for _, f := range strings.Fields(rule) {
			args = append(args, f)
		}
		if _, err := s.Do("ACL", args...); err != nil {
			t.Fatalf("redistest: ACL SETUSER %s: %v", strings.Fields(rule)[0], err)
		}
	}
	return s
}

// StartN starts n servers with the same options.
func StartN(t testing.TB, n int, o Options) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(t, o)
	}
	return servers
}

// Pools returns the servers' pools, in order.
func Pools(servers []*Server) []*redis.Pool {
	pools := make([]*redis.Pool, len(servers))
	for i, s := range servers {
		pools[i] = s.Pool
	}
	return pools
}

// Addrs returns the servers' addresses, in order.
func Addrs(servers []*Server) []string {
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr
	}
	return addrs
}

// NewPool returns a new pool on the server for the given ACL user ("" = default) and
// password. Its connections have a 1 s dial timeout and 5 s read and write timeouts as
// a backstop; callers are expected to bound their own calls more tightly.
func (s *Server) NewPool(username, password string) *redis.Pool {
	return newPool(s.Addr, s.dialOptions(username, password, time.Second, 5*time.Second))
}

func newPool(addr string, opts []redis.DialOption) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: time.Minute,
		Dial:        func() (redis.Conn, error) { return redis.Dial("tcp", addr, opts...) },
	}
}

// dialOptions are the options of a connection to s: timeouts, AUTH, and TLS with the
// client certificate when the server serves TLS.
func (s *Server) dialOptions(username, password string, connect, rw time.Duration) []redis.DialOption {
	opts := []redis.DialOption{
		redis.DialConnectTimeout(connect),
		redis.DialReadTimeout(rw),
		redis.DialWriteTimeout(rw),
		redis.DialUsername(username),
		redis.DialPassword(password),
	}
	if s.TLS != nil {
		cfg, err := s.TLS.ClientConfig()
		if err != nil {
			s.t.Fatalf("redistest: TLS client config: %v", err)
		}
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(cfg))
	}
	return opts
}

// Do sends one command on a fresh connection (default user) with a 2 s deadline.
func (s *Server) Do(cmd string, args ...any) (any, error) {
	c, err := redis.Dial("tcp", s.Addr, s.dialOptions("", s.opts.Password, 2*time.Second, 2*time.Second)...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(cmd, args...)
}

// CommandCalls returns the calls of each command s has served, from INFO
// commandstats (command names as Redis gives them: "set", "client|tracking"); a
// failure fails the test.
func (s *Server) CommandCalls(t testing.TB) map[string]int {
	t.Helper()
	info, err := redis.String(s.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatalf("redistest: %s: INFO commandstats: %v", s.Addr, err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("redistest: %s: a commandstats line %q", s.Addr, line)
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// Get returns the string at key on s, "" when the key is absent; any other failure
// fails the test.
func (s *Server) Get(t testing.TB, key string) string {
	t.Helper()
	v, err := redis.String(s.Do("GET", key))
	if errors.Is(err, redis.ErrNil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on %s: %v", key, s.Addr, err)
	}
	return v
}

// PID returns the process id of the running server, or 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// running reports whether the process is running and not paused.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && !s.paused
}

// Kill sends SIGKILL and waits for the process to exit. The address stays reserved
// for Restart.
func (s *Server) Kill() {
	s.t.Helper()
	s.stop()
}

// Pause stops the process with SIGSTOP: connections stay open and nothing answers.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP, true)
}

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() {
	s.t.Helper()
	s.signal(syscall.SIGCONT, false)
}

// Restart stops the server and starts it again on the same port. With keepData the
// dataset survives (an RDB snapshot is saved first, or the AOF is replayed); without,
// the server comes back empty, as a master that lost its memory.
func (s *Server) Restart(keepData bool) {
	s.t.Helper()
	if keepData && !s.opts.AOF && s.role != roleSentinel {
		if _, err := s.Do("SAVE"); err != nil {
			s.t.Fatalf("redistest: SAVE before restart of %s: %v", s.Addr, err)
		}
	}
	s.stop()
	if !keepData {
		for _, name := range []string{"dump.rdb", "appendonlydir", "appendonly.aof"} {
			if err := os.RemoveAll(filepath.Join(s.Dir, name)); err != nil {
				s.t.Fatalf("redistest: %v", err)
			}
		}
	}
	var err error
	for attempt := 0; attempt < 20; attempt++ { // the port may linger briefly
		if err = s.start(serverBinary(s.t)); err == nil || !strings.Contains(err.Error(), "in use") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
	for _, rule := range s.opts.Users {
		args := []any{"SETUSER"}
		for _, f := range strings.Fields(rule) {
			args = append(args, f)
		}
		if _, err := s.Do("ACL", args...); err != nil {
			s.t.Fatalf("redistest: ACL SETUSER after restart: %v", err)
		}
	}
}

// SetClock makes the server's wall clock read now+offset from this moment on and
// advance at rate times real time (rate 2: twice as fast). It applies to servers
// started with Skew; the server sees the change within a few milliseconds. Key expiry,
// TIME and every other use of the wall clock in the server follow it.
func (s *Server) SetClock(offset time.Duration, rate float64) {
	s.t.Helper()
	if !s.opts.Skew {
		s.t.Fatalf("redistest: SetClock on %s, which was not started with Skew", s.Addr)
	}
	if rate <= 0 {
		s.t.Fatalf("redistest: SetClock rate %v must be > 0", rate)
	}
	s.writeClock(time.Now(), offset, rate)
	time.Sleep(5 * time.Millisecond) // the shim re-reads its file every 2 ms
}

func (s *Server) writeClock(anchor time.Time, offset time.Duration, rate float64) {
	tmp := s.clock + ".tmp"
	line := fmt.Sprintf("%d %d %g\n", anchor.UnixNano(), offset.Nanoseconds(), rate)
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
	if err := os.Rename(tmp, s.clock); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

func (s *Server) config() string {
	var b bytes.Buffer
	if s.TLS != nil {
		fmt.Fprintf(&b, "port 0\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\ntls-auth-clients yes\n",
			s.port, s.TLS.ServerCert, s.TLS.ServerKey, s.TLS.CA)
	} else {
		fmt.Fprintf(&b, "port %d\n", s.port)
	}
	fmt.Fprintf(&b, "bind 127.0.0.1\ndir %s\nlogfile %s\n", s.Dir, filepath.Join(s.Dir, "redis.log"))
	if s.role == roleCluster || s.role == roleGroup {
		b.WriteString("repl-diskless-sync-delay 0\n") // replicas sync at once, not after 5 s
	}
	if s.role == roleCluster {
		fmt.Fprintf(&b, "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-port %d\n", s.bus)
	}
	b.WriteString("daemonize no\nsave \"\"\nprotected-mode no\ndatabases 16\n")
	if s.opts.AOF {
		b.WriteString("appendonly yes\nappendfsync always\n")
	} else {
		b.WriteString("appendonly no\n")
	}
	if s.opts.Password != "" {
		fmt.Fprintf(&b, "requirepass %q\n", s.opts.Password)
		if s.role != roleSentinel {
			fmt.Fprintf(&b, "masterauth %q\n", s.opts.Password) // replicas of a group or shard share it
		}
	}
	for _, l := range s.opts.Config {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// start launches the process and waits until it answers PING (or exits).
func (s *Server) start(bin string) error {
	conf := filepath.Join(s.Dir, "redis.conf")
	keep := s.role == roleSentinel || s.role == roleGroup
	if _, err := os.Stat(conf); !keep || err != nil {
		if err := os.WriteFile(conf, []byte(s.config()), 0o600); err != nil {
			return err
		}
	}
	logPath := filepath.Join(s.Dir, "redis.log")
	os.Remove(logPath)
	args := []string{conf}
	if s.role == roleSentinel {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Dir
	if s.clock != "" {
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+clockShim(s.t), "REDISTEST_CLOCK="+s.clock)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on port %d exited at start: %s", s.port, tail(string(log)))
		default:
		}
		if _, err := s.Do("PING"); err == nil {
			break
		} else if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d not ready after 10s: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()
	return nil
}

func (s *Server) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.paused = nil, false
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill() // SIGKILL works on a stopped process too
	<-exited
}

func (s *Server) signal(sig syscall.Signal, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("redistest: signal %v to %s, which is not running", sig, s.Addr)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v to %s: %v", sig, s.Addr, err)
	}
	s.paused = paused
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (for a server a
// test starts: redis-server here, PostgreSQL in history/pgtest).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("no free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func serverBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binPath, binErr = exec.LookPath("redis-server")
		if binErr != nil {
			binErr = errors.New("redis-server is not installed: run `make test` (it installs it) or `apt-get install redis-server`")
		}
	})
	if binErr != nil {
		t.Fatalf("redistest: %v", binErr)
	}
	return binPath
}
