package interop

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// A replay file (testdata/replay/<library>.replay) lists a library's own
// operations as the Redis commands it sends, in this line format:
//
//	# comment
//	source <repository> <file> <commit>    where the following ops come from
//	op <name>                              starts an operation
//	<COMMAND> <args...> [=> <expect>]      one command; expect is nil, OK, int, array or an integer
//
// EVAL's script argument may be @<lib>/<file>.lua: that file's text, copied by value from
// the library's source. Arguments hold ${var} (a value the test supplies) and ${tag:var}
// (Redisson's hash-tag rule: the value itself when it contains "{", else "{value}").
// SUBSCRIBE, SSUBSCRIBE (sharded, Redis 7+), PSUBSCRIBE and BLPOP start a waiter on a
// connection of its own, as the library's waiting client does.
const replayDir = "testdata/replay"

type replayOp struct {
	name   string
	source string // "repository file commit"
	lines  []replayLine
}

type replayLine struct {
	n      int // line number in the file, for messages
	args   []string
	expect string
}

var (
	sourceRE = regexp.MustCompile(`^source [\w.-]+/[\w.-]+ \S+ [0-9a-f]{40}$`)
	varRE    = regexp.MustCompile(`\$\{(tag:)?(\w+)\}`)
)

// loadReplay parses testdata/replay/<lib>.replay.
func loadReplay(t *testing.T, lib string) map[string]*replayOp {
	t.Helper()
	path := filepath.Join(replayDir, lib+".replay")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops := map[string]*replayOp{}
	var cur *replayOp
	source := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "source "):
			if !sourceRE.MatchString(line) {
				t.Fatalf("%s:%d: want `source <owner/repo> <file> <40-hex commit>`, got %q", path, n, line)
			}
			source = strings.TrimPrefix(line, "source ")
		case strings.HasPrefix(line, "op "):
			if source == "" {
				t.Fatalf("%s:%d: op before any source line", path, n)
			}
			cur = &replayOp{name: strings.TrimPrefix(line, "op "), source: source}
			ops[cur.name] = cur
		default:
			if cur == nil {
				t.Fatalf("%s:%d: command outside an op", path, n)
			}
			cmd, expect, _ := strings.Cut(line, " => ")
			cur.lines = append(cur.lines, replayLine{n: n, args: strings.Fields(cmd), expect: strings.TrimSpace(expect)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// luaScript reads a replayed script and checks that it names where it came from.
func luaScript(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(replayDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"-- Replayed by value from ", "--   file:   ", "--   commit: "} {
		if !strings.Contains(s, want) {
			t.Fatalf("%s: header lacks %q", rel, want)
		}
	}
	return s
}

// waiter is a library's waiting client: a subscriber or a BLPOP, on its own connection.
type waiter struct {
	what string
	got  chan string // messages (S/SUBSCRIBE: payload; PSUBSCRIBE: channel=payload; BLPOP: element)
	conn redis.Conn
	once sync.Once
}

func (w *waiter) close() { w.once.Do(func() { w.conn.Close() }) }

// receive waits up to d for the waiter's next message.
func (w *waiter) receive(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case m, ok := <-w.got:
		if !ok {
			t.Fatalf("%s: connection ended before a message", w.what)
		}
		return m
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", w.what, d)
	}
	return ""
}

// silent fails when the waiter receives anything within d.
func (w *waiter) silent(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case m, ok := <-w.got:
		if ok {
			t.Fatalf("%s: woke with %q, want no message", w.what, m)
		}
		t.Fatalf("%s: connection ended", w.what)
	case <-time.After(d):
	}
}

// replay runs op on server s with vars and returns the waiters it started.
func replay(t *testing.T, s *redistest.Server, ops map[string]*replayOp, name string, vars map[string]string) []*waiter {
	t.Helper()
	op := ops[name]
	if op == nil {
		t.Fatalf("replay: no op %q", name)
	}
	conn := s.Pool.Get()
	defer conn.Close()
	var waiters []*waiter
	for _, l := range op.lines {
		args := make([]any, 0, len(l.args)-1)
		for i, a := range l.args[1:] {
			if i == 0 && l.args[0] == "EVAL" && strings.HasPrefix(a, "@") {
				args = append(args, luaScript(t, a[1:]))
				continue
			}
			args = append(args, expand(t, a, vars))
		}
		where := fmt.Sprintf("%s op %s line %d (%s)", op.source, name, l.n, l.args[0])
		switch cmd := strings.ToUpper(l.args[0]); cmd {
		case "SUBSCRIBE", "SSUBSCRIBE", "PSUBSCRIBE", "BLPOP":
			waiters = append(waiters, startWaiter(t, s, cmd, args))
			continue
		}
		reply, err := conn.Do(l.args[0], args...)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := check(reply, l.expect); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
	}
	return waiters
}

func expand(t *testing.T, arg string, vars map[string]string) string {
	t.Helper()
	return varRE.ReplaceAllStringFunc(arg, func(m string) string {
		sub := varRE.FindStringSubmatch(m)
		v, ok := vars[sub[2]]
		if !ok {
			t.Fatalf("replay: no value for ${%s}", sub[2])
		}
		if sub[1] != "" && !strings.Contains(v, "{") {
			v = "{" + v + "}"
		}
		return v
	})
}

func check(reply any, expect string) error {
	switch expect {
	case "":
		return nil
	case "nil":
		if reply != nil {
			return fmt.Errorf("reply %v, want nil", reply)
		}
	case "OK":
		if s, ok := reply.(string); !ok || s != "OK" {
			return fmt.Errorf("reply %v, want OK", reply)
		}
	case "int":
		if _, ok := reply.(int64); !ok {
			return fmt.Errorf("reply %v, want an integer", reply)
		}
	case "array":
		if _, ok := reply.([]any); !ok {
			return fmt.Errorf("reply %v, want an array", reply)
		}
	default:
		if n, ok := reply.(int64); !ok || fmt.Sprint(n) != expect {
			return fmt.Errorf("reply %v, want %s", reply, expect)
		}
	}
	return nil
}

// startWaiter subscribes (or BLPOPs) on a connection of its own and returns once the
// server confirmed the subscription (or the BLPOP is blocked).
func startWaiter(t *testing.T, s *redistest.Server, cmd string, args []any) *waiter {
	t.Helper()
	conn, err := redis.Dial("tcp", s.Addr, redis.DialConnectTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w := &waiter{what: fmt.Sprintf("%s %v waiter", cmd, args), got: make(chan string, 8), conn: conn}
	t.Cleanup(w.close)
	if cmd == "BLPOP" {
		go func() {
			defer close(w.got)
			reply, err := redis.Strings(conn.Do("BLPOP", args...))
			if err == nil && len(reply) == 2 {
				w.got <- reply[1]
			}
		}()
		waitBlocked(t, s)
		return w
	}
	if cmd == "SSUBSCRIBE" {
		shardSubscribe(t, w, args)
		return w
	}
	psc := redis.PubSubConn{Conn: conn}
	if cmd == "SUBSCRIBE" {
		err = psc.Subscribe(args...)
	} else {
		err = psc.PSubscribe(args...)
	}
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(w.got)
		for {
			switch m := psc.Receive().(type) {
			case redis.Subscription:
				if m.Kind == "subscribe" || m.Kind == "psubscribe" {
					close(ready)
				}
			case redis.Message:
				if m.Pattern != "" {
					w.got <- m.Channel + "=" + string(m.Data)
				} else {
					w.got <- string(m.Data)
				}
			case error:
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no subscription confirmed", w.what)
	}
	return w
}

// shardSubscribe subscribes w's connection to shard channels and relays their messages
// (redigo's PubSubConn knows no sharded notifications: they are read as plain replies).
func shardSubscribe(t *testing.T, w *waiter, channels []any) {
	t.Helper()
	if _, err := w.conn.Do("SSUBSCRIBE", channels...); err != nil {
		t.Fatalf("%s: %v", w.what, err)
	}
	for range len(channels) - 1 { // Do read the first confirmation
		if _, err := w.conn.Receive(); err != nil {
			t.Fatalf("%s: %v", w.what, err)
		}
	}
	go func() {
		defer close(w.got)
		for {
			m, err := redis.Values(w.conn.Receive())
			if err != nil {
				return
			}
			if len(m) == 3 {
				if kind, _ := redis.String(m[0], nil); kind == "smessage" {
					data, _ := redis.String(m[2], nil)
					w.got <- data
				}
			}
		}
	}()
}

// waitBlocked waits until the server reports a client blocked (BLPOP in place).
func waitBlocked(t *testing.T, s *redistest.Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		info, err := redis.String(s.Do("INFO", "clients"))
		if err == nil && regexp.MustCompile(`blocked_clients:[1-9]`).MatchString(info) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal(errors.New("BLPOP waiter: the server never reported a blocked client"))
}
