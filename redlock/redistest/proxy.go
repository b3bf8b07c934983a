package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Proxy is a TCP relay in front of a Server that holds back every reply by a delay:
// a slow link, or a master that answers late. Requests pass through at once unless
// SetRequestDelay holds them back too.
type Proxy struct {
	Addr string      // the proxy's address: point clients here
	Pool *redis.Pool // a pool through the proxy (default user, server's password)

	delay    atomic.Int64 // replies
	reqDelay atomic.Int64 // requests
	ln       net.Listener
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

// SlowProxy starts a proxy to s whose replies arrive delay late. It is closed by
// t.Cleanup.
func (s *Server) SlowProxy(delay time.Duration) *Proxy {
	s.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	p.delay.Store(int64(delay))
	p.Pool = newPool(p.Addr, s.dialOptions("", s.opts.Password, time.Second, 5*time.Second))
	p.wg.Add(1)
	go p.accept(s.Addr)
	s.t.Cleanup(p.close)
	return p
}

// SetDelay changes the reply delay for data arriving from now on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetRequestDelay holds back requests arriving from now on by d (a link slow both ways:
// a command reaches the server d after it was sent).
func (p *Proxy) SetRequestDelay(d time.Duration) { p.reqDelay.Store(int64(d)) }

func (p *Proxy) accept(target string) {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", target, time.Second)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		go func() { defer p.wg.Done(); relayLate(server, client, &p.reqDelay); server.Close() }()
		go func() { defer p.wg.Done(); relayLate(client, server, &p.delay); client.Close() }()
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

type chunk struct {
	due  time.Time
	data []byte
}

// relayLate copies src to dst, each chunk released delay after it arrived, in order.
func relayLate(dst, src net.Conn, delay *atomic.Int64) {
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{time.Now().Add(time.Duration(delay.Load())), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			src.Close()
			for range ch {
			}
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Pool.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
