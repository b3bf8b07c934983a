// Command interop-go takes a lock with a real third-party Go Redis lock library
// (redsync, bsm/redislock or rueidis' rueidislock) so that redlockctl's tests can inspect and force-release
// it. It is a test fixture: built and run only by the interop tests.
//
// Usage:
//
//	interop-go redsync   -addrs A,B,C -key K -ttl 10s [-extend-every 300ms]
//	interop-go redislock -addrs A     -key K -ttl 10s [-metadata M] [-extend-every 300ms]
//	interop-go rueidislock -addrs A   -key K -ttl 10s
//
// It prints one JSON object per line on stdout:
//
//	{"event":"acquired","library":"redsync","key":"K","value":"..."}
//	{"event":"lost"}                            rueidislock: the lock's context ended (its keys gone)
//	{"event":"extend-failed","error":"..."}   an extension found the lock gone (then it stops extending)
//	{"event":"released"} / {"event":"release-failed","error":"..."}
//
// It holds the lock until stdin closes or SIGINT/SIGTERM arrives, then releases it
// (when it still believes it holds it) and exits 0. Failing to acquire exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// holder is one acquired lock of either library.
type holder interface {
	value() string
	extend(ctx context.Context) error
	release(ctx context.Context) error
}

var (
	outMu sync.Mutex
	enc   = json.NewEncoder(os.Stdout)
)

func emit(fields map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	_ = enc.Encode(fields)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: interop-go redsync|redislock -addrs A,B -key K -ttl D")
		os.Exit(2)
	}
	lib := os.Args[1]
	fs := flag.NewFlagSet(lib, flag.ExitOnError)
	addrs := fs.String("addrs", "", "comma-separated host:port of the masters")
	key := fs.String("key", "", "lock key")
	ttl := fs.Duration("ttl", 10*time.Second, "lock TTL")
	every := fs.Duration("extend-every", 0, "extend the lock this often (0: never)")
	metadata := fs.String("metadata", "", "redislock: metadata appended to the token")
	_ = fs.Parse(os.Args[2:])
	if *addrs == "" || *key == "" {
		fmt.Fprintln(os.Stderr, "interop-go: -addrs and -key are required")
		os.Exit(2)
	}
	list := strings.Split(*addrs, ",")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var h holder
	var err error
	switch lib {
	case "redsync":
		h, err = lockRedsync(ctx, list, *key, *ttl)
	case "redislock":
		h, err = lockRedislock(ctx, list[0], *key, *ttl, *metadata)
	case "rueidislock":
		h, err = lockRueidislock(list[0], *key, *ttl)
	default:
		fmt.Fprintf(os.Stderr, "interop-go: unknown library %q\n", lib)
		os.Exit(2)
	}
	cancel()
	if err != nil {
		emit(map[string]any{"event": "acquire-failed", "library": lib, "error": err.Error()})
		os.Exit(1)
	}
	emit(map[string]any{"event": "acquired", "library": lib, "key": *key, "value": h.value()})

	done := make(chan struct{})
	go func() { // stdin closing is the parent's way of saying "stop"
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	held := true
	var tick <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		tick = t.C
	}
	for held {
		select {
		case <-tick:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := h.extend(ctx)
			cancel()
			if err != nil {
				emit(map[string]any{"event": "extend-failed", "error": err.Error()})
				held, tick = false, nil
			}
			continue
		case <-done:
		case <-sigs:
		}
		break
	}
	if held {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := h.release(ctx)
		cancel()
		if err != nil {
			emit(map[string]any{"event": "release-failed", "error": err.Error()})
		} else {
			emit(map[string]any{"event": "released"})
		}
		return
	}
	select { // lost: wait to be told to stop
	case <-done:
	case <-sigs:
	}
}

type redsyncHolder struct{ m *redsync.Mutex }

func lockRedsync(ctx context.Context, addrs []string, key string, ttl time.Duration) (holder, error) {
	var pools []redsyncredis.Pool
	for _, a := range addrs {
		addr := a
		pools = append(pools, redsyncredigo.NewPool(&redigo.Pool{
			MaxIdle: 2,
			Dial: func() (redigo.Conn, error) {
				return redigo.Dial("tcp", addr,
					redigo.DialConnectTimeout(time.Second),
					redigo.DialReadTimeout(time.Second),
					redigo.DialWriteTimeout(time.Second))
			},
		}))
	}
	rs := redsync.New(pools...)
	m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHolder{m}, nil
}

func (h redsyncHolder) value() string { return h.m.Value() }

func (h redsyncHolder) extend(ctx context.Context) error {
	ok, err := h.m.ExtendContext(ctx)
	if err == nil && !ok {
		err = redsync.ErrExtendFailed
	}
	return err
}

func (h redsyncHolder) release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("unlock: not held")
	}
	return err
}

type redislockHolder struct{ l *redislock.Lock }

func lockRedislock(ctx context.Context, addr, key string, ttl time.Duration, metadata string) (holder, error) {
	c := goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	l, err := redislock.New(c).Obtain(ctx, key, ttl, &redislock.Options{Metadata: metadata})
	if err != nil {
		return nil, err
	}
	return redislockHolder{l}, nil
}

func (h redislockHolder) value() string { return h.l.Token() + h.l.Metadata() }

func (h redislockHolder) extend(ctx context.Context) error {
	ttl, err := h.l.TTL(ctx)
	if err != nil {
		return err
	}
	if ttl == 0 {
		return redislock.ErrNotObtained
	}
	return h.l.Refresh(ctx, ttl+time.Second, nil)
}

func (h redislockHolder) release(ctx context.Context) error { return h.l.Release(ctx) }

// rueidislockHolder holds a rueidislock lock: its keys' value is not exported, so
// value is empty and the test reads it from Redis; the lock's context ending (its
// holder found a majority of its keys gone) is reported as "lost".
type rueidislockHolder struct {
	locker   rueidislock.Locker
	cancel   context.CancelFunc
	released *atomic.Bool
}

// lockRueidislock takes the lock without waiting. Its context is not the caller's:
// the lock's own context derives from it, and the caller's ends after acquisition.
func lockRueidislock(addr, key string, ttl time.Duration) (holder, error) {
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, Dialer: net.Dialer{Timeout: time.Second}},
		KeyValidity:    ttl,
		NoLoopTracking: true,
	})
	if err != nil {
		return nil, err
	}
	lctx, cancel, err := locker.TryWithContext(context.Background(), key)
	if err != nil {
		locker.Close()
		return nil, err
	}
	h := rueidislockHolder{locker, cancel, new(atomic.Bool)}
	go func() {
		<-lctx.Done()
		if !h.released.Load() {
			emit(map[string]any{"event": "lost"})
		}
	}()
	return h, nil
}

func (h rueidislockHolder) value() string { return "" }

func (h rueidislockHolder) extend(context.Context) error { return nil } // the locker extends on its own

func (h rueidislockHolder) release(context.Context) error {
	h.released.Store(true)
	h.cancel()
	h.locker.Close()
	return nil
}
