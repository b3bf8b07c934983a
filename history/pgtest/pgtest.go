// Package pgtest starts a real PostgreSQL server for tests: a private cluster
// (initdb) in a temporary directory, listening on a free loopback port and on a
// Unix socket in that directory, with password (SCRAM) authentication for TCP. It is
// to the history store's PostgreSQL tests what redistest is to Redis: a test that
// needs the server fails (it never skips) when Debian's postgresql package is not
// installed (`make deps` installs it).
//
// PostgreSQL refuses to run as root; as root, the cluster is run as the postgres
// user (or nobody), which then owns the directory.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// User and Password are the superuser of every cluster Start makes.
const (
	User     = "redlockctl"
	Password = "pgtest-secret-9f2c"
)

// Server is one postgres process over its own cluster.
type Server struct {
	Addr string // 127.0.0.1:port
	Dir  string // the cluster's directory (data, socket, log)

	t        testing.TB
	cmd      *exec.Cmd
	exited   chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	dbs      int
}

// Start initialises a cluster and starts postgres on it; t.Cleanup stops it
// (SIGINT: a fast shutdown) and removes the directory.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.t = t
	t.Cleanup(s.Close)
	return s
}

// New is Start for a server that outlives one test (a benchmark's store): the
// caller stops it with Close. Its NewDatabase and Conn need a test: see Start.
func New() (*Server, error) {
	initdb, postgres, err := binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redlockctl-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir}
	fail := func(err error) (*Server, error) { os.RemoveAll(dir); return nil, err }
	cred, err := credential(dir)
	if err != nil {
		return fail(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o600); err != nil {
		return fail(err)
	}
	if cred != nil {
		os.Chown(pw, int(cred.Uid), int(cred.Gid))
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", User, "--pwfile", pw, "--auth-host=scram-sha-256", "--auth-local=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %v\n%s", err, out))
	}
	os.Remove(pw)
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := redistest.FreePort()
		if err != nil {
			return fail(err)
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start(postgres, data, port, cred); lastErr == nil {
			return s, nil
		}
	}
	return fail(fmt.Errorf("postgres: %v", lastErr))
}

// Close stops the server (SIGINT: a fast shutdown; SIGKILL after 10 s) and
// removes its directory.
func (s *Server) Close() {
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
		os.RemoveAll(s.Dir)
	})
}

// CPU returns the CPU time the server's processes (postmaster and the backends
// alive now) have used, from /proc.
func (s *Server) CPU() time.Duration { return ProcessCPU(s.cmd.Process.Pid) }

// ProcessCPU returns the CPU time process pid and its children alive now have
// used, from /proc: a postgres server's, given its postmaster.
func ProcessCPU(pid int) time.Duration {
	tick := time.Second / 100 // USER_HZ
	var total time.Duration
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(st[i+1:]) // state ppid ... utime(12) stime(13)
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if e.Name() != strconv.Itoa(pid) && ppid != pid {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+k) * tick
	}
	return total
}

func (s *Server) start(bin, data string, port int, cred *syscall.Credential) error {
	logPath := filepath.Join(s.Dir, "postgres.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(bin, "-D", data, "-p", strconv.Itoa(port), "-k", s.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=50", "-c", "shared_buffers=128MB")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.url("postgres", true))
		cancel()
		if err == nil {
			c.Close(context.Background())
			break
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("exited at start: %s", out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("not answering within 30 s: %v\n%s", err, out)
		}
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

// url is the URL of database db, with the password or without it.
func (s *Server) url(db string, withPassword bool) string {
	u := url.URL{Scheme: "postgres", Host: s.Addr, Path: "/" + db, RawQuery: "sslmode=disable"}
	if withPassword {
		u.User = url.UserPassword(User, Password)
	} else {
		u.User = url.User(User)
	}
	return u.String()
}

// NewDatabase creates a fresh database and returns its URL, without the password
// (Password is the password).
func (s *Server) NewDatabase() string {
	s.t.Helper()
	u, err := s.CreateDatabase()
	if err != nil {
		s.t.Fatalf("pgtest: %v", err)
	}
	return u
}

// CreateDatabase is NewDatabase for a server from New.
func (s *Server) CreateDatabase() (string, error) {
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("db%d", s.dbs)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.url("postgres", true))
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %v", err)
	}
	return s.url(name, false), nil
}

// Conn connects to the database of url (from NewDatabase) as the superuser, for a
// test to look at what a store wrote; closed by t.Cleanup.
func (s *Server) Conn(dbURL string) *pgx.Conn {
	s.t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		s.t.Fatalf("pgtest: %v", err)
	}
	u.User = url.UserPassword(User, Password)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		s.t.Fatalf("pgtest: %v", err)
	}
	s.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// credential is who runs the cluster: nil (this process's user) unless this
// process is root, then postgres (or nobody), given dir.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run PostgreSQL as (it refuses root)")
}

var (
	binOnce             sync.Once
	initdbBin, pgBin    string
	errNoPostgreSQLBins error
)

// binaries finds initdb and postgres: on PATH, else Debian's
// /usr/lib/postgresql/VERSION/bin (the newest).
func binaries() (initdb, postgres string, err error) {
	binOnce.Do(func() {
		initdbBin, _ = exec.LookPath("initdb")
		pgBin, _ = exec.LookPath("postgres")
		if initdbBin != "" && pgBin != "" {
			return
		}
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		for i := len(dirs) - 1; i >= 0; i-- {
			a, b := filepath.Join(dirs[i], "initdb"), filepath.Join(dirs[i], "postgres")
			if _, err := os.Stat(a); err == nil {
				if _, err := os.Stat(b); err == nil {
					initdbBin, pgBin = a, b
					return
				}
			}
		}
		errNoPostgreSQLBins = errors.New("initdb and postgres not found on PATH nor in /usr/lib/postgresql/*/bin: install Debian's postgresql package (make deps)")
	})
	return initdbBin, pgBin, errNoPostgreSQLBins
}
