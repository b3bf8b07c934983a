package demo

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// serverProc is one redis-server process the demo runs on loopback: no persistence
// (a restart comes back empty), in a directory of its own.
type serverProc struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
	exited   chan struct{}
}

// startServer starts redis-server bin on port (a free one when 0) in dir and waits
// until it answers PING.
func startServer(bin, dir string, port int) (*serverProc, error) {
	p := &serverProc{bin: bin, dir: dir, port: port}
	for attempt := 0; ; attempt++ {
		if port == 0 {
			var err error
			if p.port, err = freePort(); err != nil {
				return nil, err
			}
		}
		err := p.start()
		if err == nil {
			return p, nil
		}
		if port != 0 || attempt >= 4 || !strings.Contains(err.Error(), "in use") {
			return nil, err
		}
	}
}

// addr is the server's host:port.
func (p *serverProc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

func (p *serverProc) start() error {
	conf := filepath.Join(p.dir, "redis.conf")
	logPath := filepath.Join(p.dir, "redis.log")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\ndaemonize no\nsave \"\"\nappendonly no\nprotected-mode yes\n",
		p.port, p.dir, logPath)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		return err
	}
	os.Remove(logPath)
	cmd := exec.Command(p.bin, conf)
	cmd.Dir = p.dir
	cmd.Env = []string{} // nothing of the user's environment (no secret) reaches it
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on port %d exited at start: %s", p.port, lastLines(string(log)))
		default:
		}
		c, err := redis.Dial("tcp", p.addr(), redis.DialConnectTimeout(200*time.Millisecond), redis.DialReadTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d not ready after 10s: %v", p.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.cmd, p.exited = cmd, exited
	return nil
}

// stop kills the server (its data, kept in memory only, is gone) and waits for it.
func (p *serverProc) stop() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}

// restart starts the stopped server again on its port, empty.
func (p *serverProc) restart() error {
	if p.cmd != nil {
		return errors.New("demo: restart of a running server")
	}
	return p.start()
}

func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("demo: no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
