package redistest

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

func TestStartPasswordAndUsers(t *testing.T) {
	s := Start(t, Options{Password: "s3cret", Users: []string{"ro on >ropw ~* +@read"}})
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatalf("SET with the default user: %v", err)
	}
	c := s.Pool.Get()
	defer c.Close()
	if v, err := redis.String(c.Do("GET", "k")); err != nil || v != "v" {
		t.Fatalf("GET through Pool = %q, %v; want v", v, err)
	}
	anon, err := redis.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Do("GET", "k"); err == nil {
		t.Fatal("GET without AUTH succeeded on a server with requirepass")
	}
	ro := s.NewPool("ro", "ropw")
	defer ro.Close()
	rc := ro.Get()
	defer rc.Close()
	if v, err := redis.String(rc.Do("GET", "k")); err != nil || v != "v" {
		t.Fatalf("GET as ro = %q, %v", v, err)
	}
	if _, err := rc.Do("SET", "k", "w"); err == nil {
		t.Fatal("SET as a read-only ACL user succeeded")
	}
}

func TestKillAndRestart(t *testing.T) {
	s := Start(t, Options{})
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Restart(true)
	if v, err := redis.String(s.Do("GET", "k")); err != nil || v != "v" {
		t.Fatalf("after Restart(true): GET = %q, %v; want v", v, err)
	}
	s.Kill()
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if s.PID() != 0 {
		t.Fatal("PID != 0 after Kill")
	}
	s.Restart(false)
	if n, err := redis.Int(s.Do("EXISTS", "k")); err != nil || n != 0 {
		t.Fatalf("after Restart(false): EXISTS = %d, %v; want 0", n, err)
	}
}

func TestRestartKeepsAOF(t *testing.T) {
	s := Start(t, Options{AOF: true})
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Restart(true) // no SAVE: the AOF (fsync always) must carry the key
	if v, err := redis.String(s.Do("GET", "k")); err != nil || v != "v" {
		t.Fatalf("after AOF restart: GET = %q, %v; want v", v, err)
	}
}

func TestPauseResume(t *testing.T) {
	s := Start(t, Options{})
	s.Pause()
	c, err := redis.Dial("tcp", s.Addr, redis.DialReadTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Do("PING")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("PING to a paused server: %v; want a timeout", err)
	}
	s.Resume()
	if _, err := s.Do("PING"); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

// serverMillis reads the server's wall clock with TIME.
func serverMillis(t *testing.T, s *Server) int64 {
	t.Helper()
	v, err := redis.Int64s(s.Do("TIME"))
	if err != nil {
		t.Fatal(err)
	}
	return v[0]*1000 + v[1]/1000
}

func TestClockShimOffsetAndRate(t *testing.T) {
	s := Start(t, Options{Skew: true})

	s.SetClock(5*time.Second, 1)
	if d := serverMillis(t, s) - time.Now().UnixMilli(); d < 4900 || d > 5100 {
		t.Fatalf("offset +5s: server - local = %d ms", d)
	}

	s.SetClock(0, 2)
	start, t0 := time.Now(), serverMillis(t, s)
	if _, err := s.Do("SET", "k", "v", "PX", 2000); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if n, _ := redis.Int(s.Do("EXISTS", "k")); n != 1 {
		t.Fatal("PX 2000 key gone after 0.5 s at rate 2 (1 s of server time)")
	}
	time.Sleep(700 * time.Millisecond)
	if n, _ := redis.Int(s.Do("EXISTS", "k")); n != 0 {
		t.Fatal("PX 2000 key still there after 1.2 s at rate 2 (2.4 s of server time)")
	}
	real := time.Since(start).Milliseconds()
	server := serverMillis(t, s) - t0
	if ratio := float64(server) / float64(real); ratio < 1.8 || ratio > 2.2 {
		t.Fatalf("TIME advanced %d ms over %d ms of real time: ratio %.2f, want ~2", server, real, ratio)
	}
}

func TestSlowProxy(t *testing.T) {
	s := Start(t, Options{})
	p := s.SlowProxy(150 * time.Millisecond)
	c := p.Pool.Get()
	defer c.Close()
	start := time.Now()
	if _, err := c.Do("PING"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("PING through a 150 ms proxy answered in %v", d)
	}
	p.SetDelay(0)
	if _, err := c.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := redis.String(s.Do("GET", "k")); err != nil || v != "v" {
		t.Fatalf("write through the proxy did not reach the server: %q, %v", v, err)
	}
}

func TestTLS(t *testing.T) {
	s := Start(t, Options{TLS: true, Password: "pw"})
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	plain, err := redis.Dial("tcp", s.Addr, redis.DialReadTimeout(time.Second), redis.DialPassword("pw"))
	if err == nil {
		_, err = plain.Do("PING")
		plain.Close()
	}
	if err == nil {
		t.Fatal("a plain-text connection was served by a TLS-only server")
	}
	p := s.SlowProxy(0)
	c := p.Pool.Get()
	defer c.Close()
	if v, err := redis.String(c.Do("GET", "k")); err != nil || v != "v" {
		t.Fatalf("GET over TLS through the proxy = %q, %v", v, err)
	}
}
