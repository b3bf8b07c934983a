package poll

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// misbehave is what a scripted master does when it gets a command: send reply (raw
// bytes) instead of the real answer, then close or reset the connection, or write drip
// every interval until the client leaves, or carry on.
type misbehave struct {
	reply string
	then  string // "", "close", "reset" (RST), "kill" (stop listening, then RST)
	drip  string
	every time.Duration
}

// scriptedMaster is the one place a scripted server is right: no real Redis sends
// these replies. It answers the handshake and a poll's commands as Redis does, except
// the commands in script.
func scriptedMaster(t testing.TB, script map[string]misbehave) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serveScripted(c, ln, script)
			}()
		}
	}()
	return ln.Addr().String()
}

func serveScripted(c net.Conn, ln net.Listener, script map[string]misbehave) {
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		name := strings.ToUpper(args[0])
		m, ok := script[name]
		if !ok {
			io.WriteString(c, normalReply(args))
			continue
		}
		if m.then == "kill" {
			ln.Close() // a killed server refuses new connections
			c.(*net.TCPConn).SetLinger(0)
			return // closed with RST, before any byte
		}
		if _, err := io.WriteString(c, m.reply); err != nil {
			return
		}
		switch m.then {
		case "close":
			return
		case "reset":
			time.Sleep(20 * time.Millisecond) // let the client read what came
			c.(*net.TCPConn).SetLinger(0)
			return
		}
		for m.every > 0 && m.drip != "" {
			time.Sleep(m.every)
			if _, err := io.WriteString(c, m.drip); err != nil {
				return
			}
		}
	}
}

// readCommand reads one command (an array of bulk strings) from a client.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || line[0] != '*' || n < 1 {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		size, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// normalReply is what Redis answers to the commands of a poll, on an empty database.
func normalReply(args []string) string {
	switch strings.ToUpper(args[0]) {
	case "PING":
		return "+PONG\r\n"
	case "AUTH", "SELECT":
		return "+OK\r\n"
	case "TIME":
		now := time.Now()
		return "*2\r\n" + bulk(strconv.FormatInt(now.Unix(), 10)) + bulk(strconv.Itoa(now.Nanosecond()/1000))
	case "INFO":
		return bulk("# Server\r\nredis_version:7.0.15\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\nuptime_in_seconds:86400\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n")
	case "CONFIG":
		v := map[string]string{"appendonly": "yes", "appendfsync": "always", "maxmemory": "0", "maxmemory-policy": "noeviction", "min-replicas-to-write": "0"}[args[2]]
		return "*2\r\n" + bulk(args[2]) + bulk(v)
	case "DBSIZE":
		return ":0\r\n"
	case "SCAN":
		return "*2\r\n$1\r\n0\r\n*0\r\n"
	case "MGET":
		return fmt.Sprintf("*%d\r\n%s", len(args)-1, strings.Repeat("$-1\r\n", len(args)-1))
	case "PTTL":
		return ":-2\r\n"
	case "TYPE":
		return "+none\r\n"
	}
	return "-ERR unknown command '" + args[0] + "'\r\n"
}

// realPair starts the two real masters of the hostile tests, holding "job" and "other".
func realPair(t *testing.T) []*redistest.Server {
	real := redistest.StartN(t, 2, redistest.Options{})
	do(t, real, "SET", "job", "worker-1#"+hex32, "PX", 60000)
	do(t, real, "SET", "other", "worker-2#"+hex32, "PX", 60000)
	return real
}

// hostilePoll polls the two real masters and a scripted third one, and checks that the
// scripted master alone is down, with an error of kind and text, and that the real
// masters' rows are whole.
func hostilePoll(t *testing.T, real []*redistest.Server, script map[string]misbehave, kind errkind.Kind, text string) {
	t.Helper()
	c := testConfig(t, real, func(c *config.Config) { c.Inspect.Timeout = 700 * time.Millisecond })
	c.Masters = append(c.Masters, config.MasterConfig{Name: "m3", Addr: scriptedMaster(t, script)})
	p := newPoller(t, c)
	defer p.Close()
	s := p.Poll(context.Background())

	m3 := s.Masters[2]
	if m3.Up || m3.ErrorKind != kind || !strings.Contains(m3.Error, text) {
		t.Errorf("m3: up %v, %s: %q; want down, %s with %q", m3.Up, m3.ErrorKind, m3.Error, kind, text)
	}
	if strings.Contains(m3.Error, "TLS") {
		t.Errorf("m3: %q points at TLS", m3.Error)
	}
	for _, m := range s.Masters[:2] {
		if !m.Up {
			t.Errorf("real master %s down: %s", m.Name, m.Error)
		}
	}
	for _, res := range []string{"job", "other"} {
		r := row(t, s, res)
		if r.State != inspect.StateHeld || r.Holders != 2 || r.Nodes[0].PTTLMs <= 0 || r.Nodes[1].PTTLMs <= 0 ||
			r.Nodes[0].Value != r.Value || r.Nodes[1].Value != r.Value || r.Nodes[2].Error == "" {
			t.Errorf("%s not whole: %s %d holders, nodes %+v", res, r.State, r.Holders, r.Nodes)
		}
	}
	t.Logf("m3: %s: %s", m3.ErrorKind, m3.Error)
}

// Replies to TIME (through redigo and the pool) that crashed or exhausted the process.
func TestHostileTIME(t *testing.T) {
	t.Parallel()
	real := realPair(t)
	deep := strings.Repeat("*1\r\n", 100000) + ":1\r\n"
	for _, c := range []struct {
		name, reply, want string
	}{
		{"overflow", "$99999999999999999999\r\n", `bulk length "99999999999999999999" overflows int64`},
		{"93GiB", "$99999999999\r\n", "bulk string of 99999999999 bytes exceeds the limit of 1 MiB"},
		{"huge-array", "*99999999999\r\n", "array of 99999999999 elements exceeds the limit of 65536"},
		{"negative", "*2\r\n$-5\r\n", "bulk length -5 is negative"},
		{"deep", deep, "arrays nested deeper than 16 levels"},
		{"endless-line", "+" + strings.Repeat("x", 70000), `a '+' line is longer than 64 KiB`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			hostilePoll(t, real, map[string]misbehave{"TIME": {reply: c.reply, drip: "x", every: 50 * time.Millisecond}},
				errkind.Protocol, "TIME: protocol error: "+c.want)
		})
	}
}

// Replies inside a SCAN page (the poller's own reader) that were read as nil or a key.
func TestHostileSCAN(t *testing.T) {
	t.Parallel()
	real := realPair(t)
	for _, c := range []struct {
		name, key, want string
	}{
		{"negative", "$-5\r\n", "bulk length -5 is negative"},
		{"wraps-negative", "$9223372036854775808\r\n", `bulk length "9223372036854775808" overflows int64`},
		{"wraps-to-1", "$18446744073709551617\r\nk\r\n", `bulk length "18446744073709551617" overflows int64`},
		{"over-512MiB", "$536870913\r\n", "bulk string of 536870913 bytes exceeds the limit of 512 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			hostilePoll(t, real, map[string]misbehave{"SCAN": {reply: "*2\r\n$1\r\n0\r\n*1\r\n" + c.key}},
				errkind.Protocol, "SCAN: protocol error: "+c.want)
		})
	}
}

// Replies that never end: bounded by the poll deadline, each named.
func TestHostileNeverEnds(t *testing.T) {
	t.Parallel()
	real := realPair(t)
	for _, c := range []struct {
		name, cmd, reply, drip, want string
	}{
		{"TIME-bulk", "TIME", "$1000000\r\n", "x", "TIME: protocol error: reply did not end before the deadline: a bulk string of 1000000 bytes declared"},
		{"TIME-array", "TIME", "*2\r\n:1\r\n", "", "TIME: protocol error: reply did not end before the deadline: an array of 2 elements declared, 1 received"},
		{"SCAN-bulk", "SCAN", "*2\r\n$1\r\n0\r\n*1\r\n$536000000\r\n", "x", "SCAN: protocol error: reply did not end before the deadline: a bulk string of 536000000 bytes declared"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			hostilePoll(t, real, map[string]misbehave{c.cmd: {reply: c.reply, drip: c.drip, every: 50 * time.Millisecond}},
				errkind.Protocol, c.want)
		})
	}
}

// A connection closed or reset mid-reply, or by a master killed before it answered, is
// not a TLS-only port.
func TestHostileClosed(t *testing.T) {
	t.Parallel()
	real := realPair(t)
	for _, c := range []struct {
		name string
		m    misbehave
		want string
	}{
		{"close-mid-reply", misbehave{reply: "*2\r\n$10\r\n17", then: "close"}, "TIME: server closed the connection mid-reply: a bulk string of 10 bytes declared, 2 received"},
		{"reset-mid-reply", misbehave{reply: "*2\r\n$10\r\n17", then: "reset"}, "mid-reply: a bulk string of 10 bytes declared, 2 received"},
		{"killed", misbehave{then: "kill"}, "refuses connections now: the server went down"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			hostilePoll(t, real, map[string]misbehave{"TIME": c.m}, errkind.Closed, c.want)
		})
	}
}

// The peak memory of a poll that meets a 14-byte header declaring 512 MiB, then a byte
// every 50 ms, stays within a few MiB of a normal poll's: measured as the peak resident
// size (getrusage's ru_maxrss) of a child process that polls once.
func TestHostileBulkMemory(t *testing.T) {
	if addrs := os.Getenv("REDLOCKCTL_MEMCHILD"); addrs != "" {
		memChild(t, strings.Split(addrs, ","))
		return
	}
	real := redistest.StartN(t, 2, redistest.Options{})
	for i := range 2000 {
		do(t, real, "SET", fmt.Sprintf("lock:%d", i), "worker-1#"+hex32, "PX", 60000)
	}
	normal := scriptedMaster(t, nil)
	hostile := scriptedMaster(t, map[string]misbehave{"SCAN": {reply: "*2\r\n$1\r\n0\r\n*1\r\n$536000000\r\n", drip: "x", every: 50 * time.Millisecond}})
	peak := func(third string) (int64, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostileBulkMemory$", "-test.v")
		cmd.Env = append(os.Environ(), "REDLOCKCTL_MEMCHILD="+real[0].Addr+","+real[1].Addr+","+third)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		i := strings.Index(string(out), "PEAK ")
		if i < 0 {
			t.Fatalf("child printed no peak:\n%s", out)
		}
		f := strings.Fields(string(out[i:]))
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		return kb << 10, strings.Join(f[2:4], " ")
	}
	base, baseErr := peak(normal)
	bad, badErr := peak(hostile)
	t.Logf("peak RSS: normal poll %.1f MiB (%s), hostile bulk %.1f MiB (%s)", float64(base)/(1<<20), baseErr, float64(bad)/(1<<20), badErr)
	if bad > base+4<<20 {
		t.Errorf("a 14-byte header cost %.1f MiB more than a normal poll", float64(bad-base)/(1<<20))
	}
}

// memChild polls addrs once and prints its peak RSS (kB) and how the third master fared.
func memChild(t *testing.T, addrs []string) {
	c := config.Default()
	c.Inspect.Timeout = time.Second
	for i, a := range addrs {
		c.Masters = append(c.Masters, config.MasterConfig{Name: fmt.Sprintf("m%d", i+1), Addr: a})
	}
	p := newPoller(t, c)
	s := p.Poll(context.Background())
	p.Close()
	if !s.Masters[0].Up || !s.Masters[1].Up || len(s.Resources) != 2000 {
		t.Fatalf("real masters not read whole: %+v, %d rows", s.Masters[:2], len(s.Resources))
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	kb := int64(ru.Maxrss) // KiB on Linux and the BSDs
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		kb >>= 10 // bytes there
	}
	fmt.Printf("PEAK %d m3-up=%v kind=%s\n", kb, s.Masters[2].Up, s.Masters[2].ErrorKind)
}
