// Command churn is the live feed's workload: workers take and release locks through a
// real lock library (redsync, or this project's redlock) as fast as they can, and log
// every lifecycle themselves, so that what `redlockctl events` reports can be checked
// against what really happened. It is a test and benchmark fixture.
//
// Usage:
//
//	churn -lib redsync|redlock -addrs A,B,C,D,E -prefix live: -workers 16 -hold 2ms
//	      -ttl 1s -duration 10s [-keys N [-race-start]] [-overrun-every N] [-overrun-ttl 300ms] [-pause 0]
//	      [-mode cycle|do|reacquire|fenced|run [-redlockctl BIN -config FILE]]
//
// An address NAME@S1+S2+S3 is a Sentinel group: each connection goes to the master the
// first answering sentinel names, and connections live at most a second, so that the
// workload follows a failover. Each worker loops: acquire (one try), hold, release, then
// waits -pause. With -keys 0 every worker has
// a key of its own; with -keys N the workers share N keys (contention). With
// -race-start as well, worker w always uses key w%N, and the workers sharing a key
// start each attempt together (a barrier), so that their SETs race on every master and
// split them: one attempt wins a quorum, the others reach the rest of the masters (or
// none) and remove what they wrote; the next attempts start when every one of the
// key's workers is done with its lock. Each worker then has a client of its own (this
// project's library sends a master's commands in order on one connection per client,
// so that the workers of one client would never split the masters). Every
// -overrun-every-th cycle of a worker takes the lock with -overrun-ttl and never
// releases it: the lock expires. It prints one JSON object per line on stdout:
//
//	{"lib","key","value","started_ns","acquired_ns","ended_ns","end":"released"|"expired"}
//	{"lib","key","value","started_ns","ended_ns","end":"failed","reached"}   an acquisition that failed
//
// started_ns is when the acquire call was made; acquired_ns when it returned (the
// quorum was reached before it); ended_ns when the release call was sent, the TTL's end
// for an expiry, or when a failed acquire returned. A failed attempt's value is
// logged where the library tells it (redsync: the value it generated, captured through
// WithGenValueFunc). reached is how many masters a failed attempt's SET succeeded on,
// where the library's error tells it (absent otherwise): redsync's names the masters
// where the key was taken (ErrNodeTaken, or ErrTaken once a quorum was) or that failed
// (RedisError), and reached is the rest (an upper bound with ErrTaken, which leaves
// out the failed ones); this project's library's QuorumError gives each master's
// outcome, and reached counts those that said OK. Both libraries remove a failed
// attempt's value from the masters it reached before they return. After a failed
// attempt a worker with a key of its own waits for whatever it may have left to
// expire; one sharing a key waits -hold (with -race-start, for the next start).
//
// -mode picks the pattern of this project's library (-lib redlock, a key per worker)
// the workers follow instead of the plain cycle above (-mode cycle, the default):
//
//   - do: each lock through Client.Do, held -hold while Do extends it every ttl/3; every
//     -overrun-every-th cycle's fn outlives its lock (a client that extends twice at
//     most), and is logged expired at the lock's deadline. A lock lost while its holder
//     did not overrun (a starved keep-alive) is logged "lost".
//   - reacquire: the plain cycle with no overruns, each hold drawn from 1ms to -hold, and
//     the next acquisition of the key sent the moment the release returned.
//   - fenced: the plain cycle with fenced locks (WithFencing): each acquisition reads and
//     raises the <key>:fence counters beside the lock.
//   - run: each cycle is a `redlockctl run KEY --ttl TTL` of the binary -redlockctl with
//     -config, whose job prints its lock's value, sleeps -hold and prints "end"; the
//     worker logs the job's start as acquired_ns and its end as ended_ns. A job that
//     did not end cleanly is logged "lost".
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
)

type record struct {
	Lib        string `json:"lib"`
	Mode       string `json:"mode"`
	Key        string `json:"key"`
	Value      string `json:"value,omitempty"`
	StartedNs  int64  `json:"started_ns,omitempty"`
	AcquiredNs int64  `json:"acquired_ns,omitempty"`
	EndedNs    int64  `json:"ended_ns,omitempty"`
	End        string `json:"end"`
	Reached    *int   `json:"reached,omitempty"` // a failed attempt's masters, where the library tells
}

// locker is one library's acquire and release.
type locker interface {
	// acquire makes one attempt. On failure, value is the attempt's where the library
	// tells it, and reached how many masters its SET succeeded on (-1: not told).
	acquire(ctx context.Context, key string, ttl time.Duration) (value string, release func(context.Context) error, reached int, err error)
}

func main() {
	lib := flag.String("lib", "redsync", "redsync or redlock")
	addrs := flag.String("addrs", "", "comma-separated host:port of the masters")
	prefix := flag.String("prefix", "live:", "key prefix")
	workers := flag.Int("workers", 16, "concurrent workers")
	hold := flag.Duration("hold", 2*time.Millisecond, "how long each lock is held")
	ttl := flag.Duration("ttl", time.Second, "lock TTL")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	keys := flag.Int("keys", 0, "shared keys (0: one per worker)")
	overrunEvery := flag.Int("overrun-every", 0, "every Nth cycle of a worker overruns (0: never)")
	overrunTTL := flag.Duration("overrun-ttl", 300*time.Millisecond, "TTL of an overrunning lock")
	pause := flag.Duration("pause", 0, "how long a worker waits after a release")
	raceStart := flag.Bool("race-start", false, "workers sharing a key (-keys) start each attempt together")
	mode := flag.String("mode", "cycle", "cycle, do, reacquire, fenced or run")
	bin := flag.String("redlockctl", "", "-mode run: the redlockctl binary")
	config := flag.String("config", "", "-mode run: the config file run is given")
	flag.Parse()
	if *addrs == "" {
		fmt.Fprintln(os.Stderr, "churn: -addrs is required")
		os.Exit(2)
	}
	switch *mode {
	case "cycle":
	case "do", "reacquire", "fenced", "run":
		switch {
		case *lib != "redlock":
			fmt.Fprintf(os.Stderr, "churn: -mode %s is this project's library's: it needs -lib redlock\n", *mode)
			os.Exit(2)
		case *keys > 0 || *raceStart:
			fmt.Fprintf(os.Stderr, "churn: -mode %s gives each worker a key of its own: -keys and -race-start are for -mode cycle\n", *mode)
			os.Exit(2)
		case *mode == "run" && (*bin == "" || *config == ""):
			fmt.Fprintln(os.Stderr, "churn: -mode run needs -redlockctl BIN and -config FILE")
			os.Exit(2)
		case *mode == "reacquire" && *overrunEvery > 0:
			fmt.Fprintln(os.Stderr, "churn: -mode reacquire releases every lock: -overrun-every is for the other modes")
			os.Exit(2)
		}
	default:
		fmt.Fprintf(os.Stderr, "churn: unknown -mode %q (cycle, do, reacquire, fenced or run)\n", *mode)
		os.Exit(2)
	}
	if *raceStart && *keys <= 0 {
		fmt.Fprintln(os.Stderr, "churn: -race-start needs -keys N (workers sharing keys)")
		os.Exit(2)
	}
	var pools []*redis.Pool
	for _, a := range strings.Split(*addrs, ",") {
		addr := a
		pools = append(pools, &redis.Pool{MaxIdle: *workers + 2, MaxConnLifetime: time.Second, Dial: func() (redis.Conn, error) {
			target, err := resolve(addr)
			if err != nil {
				return nil, err
			}
			return redis.Dial("tcp", target, redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
		}})
	}
	// lks[w] is worker w's: one for all of them, or with -race-start one each (as
	// contenders in separate processes have), since this project's library sends each
	// master's commands in order on one connection per client, so that the workers of
	// one client never split the masters.
	lks := make([]locker, *workers)
	for w := range lks {
		if w > 0 && !*raceStart {
			lks[w] = lks[0]
			continue
		}
		switch *lib {
		case "redsync":
			var rp []redsyncredis.Pool
			for _, p := range pools {
				rp = append(rp, redsyncredigo.NewPool(p))
			}
			lks[w] = redsyncLocker{rs: redsync.New(rp...), masters: len(pools)}
		case "redlock":
			opts := []redlock.Option{redlock.WithKeyPrefix(""), redlock.WithRetries(0), redlock.WithOwner("churn"), redlock.WithRestartGuard(0)}
			if *mode == "fenced" {
				opts = append(opts, redlock.WithFencing())
			}
			c, err := redlock.New(pools, opts...)
			if err != nil {
				fmt.Fprintln(os.Stderr, "churn:", err)
				os.Exit(2)
			}
			lks[w] = redlockLocker{c}
		default:
			fmt.Fprintf(os.Stderr, "churn: unknown -lib %q\n", *lib)
			os.Exit(2)
		}
	}

	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	log := func(r record) {
		r.Lib, r.Mode = *lib, *mode
		mu.Lock()
		enc.Encode(r)
		mu.Unlock()
	}
	end := time.Now().Add(*duration)
	var starts []*barrier // per key, with -race-start
	if *raceStart {
		for k := range *keys {
			starts = append(starts, &barrier{n: (*workers - k + *keys - 1) / *keys, end: end})
		}
	}
	var wg sync.WaitGroup
	switch *mode {
	case "do":
		// A second client whose locks are extended twice at most: its holders overrun.
		overrunner, err := redlock.New(pools, redlock.WithKeyPrefix(""), redlock.WithRetries(0), redlock.WithOwner("churn"),
			redlock.WithRestartGuard(0), redlock.WithMaxExtensions(2))
		if err != nil {
			fmt.Fprintln(os.Stderr, "churn:", err)
			os.Exit(2)
		}
		dw := doWorker{c: lks[0].(redlockLocker).c, overrunner: overrunner, hold: *hold, ttl: *ttl, every: *overrunEvery, end: end, log: log}
		for w := 0; w < *workers; w++ {
			wg.Go(func() { dw.loop(fmt.Sprintf("%sw%d", *prefix, w)) })
		}
		wg.Wait()
		out.Flush()
		return
	case "run":
		rw := runWorker{bin: *bin, config: *config, hold: *hold, ttl: *ttl, end: end, log: log}
		for w := 0; w < *workers; w++ {
			wg.Go(func() { rw.loop(fmt.Sprintf("%sw%d", *prefix, w)) })
		}
		wg.Wait()
		out.Flush()
		return
	}
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cycle := 1; ; cycle++ {
				key := fmt.Sprintf("%sw%d", *prefix, w)
				switch {
				case *raceStart:
					key = fmt.Sprintf("%sk%d", *prefix, w%*keys)
					if !starts[w%*keys].wait() {
						return
					}
				case !time.Now().Before(end):
					return
				case *keys > 0:
					key = fmt.Sprintf("%sk%d", *prefix, (w+cycle)%*keys)
				}
				overrun := *overrunEvery > 0 && cycle%*overrunEvery == 0
				h := *hold
				if *mode == "reacquire" && h > time.Millisecond {
					h = time.Millisecond + mrand.N(h-time.Millisecond+1)
				}
				t := *ttl
				if overrun {
					t = *overrunTTL
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				started := time.Now()
				value, release, reached, err := lks[w].acquire(ctx, key, t)
				acquired := time.Now()
				cancel()
				if err != nil {
					r := record{Key: key, Value: value, StartedNs: started.UnixNano(), EndedNs: acquired.UnixNano(), End: "failed"}
					if reached >= 0 {
						r.Reached = &reached
					}
					log(r)
					switch {
					case *raceStart:
						// The next start waits for the winner's release.
					case *keys > 0:
						time.Sleep(*hold)
					default:
						time.Sleep(t + 400*time.Millisecond)
					}
					continue
				}
				if overrun {
					// Never released: it expires; wait past it so that this worker's
					// next lock on the key is a new lifecycle.
					log(record{Key: key, Value: value, StartedNs: started.UnixNano(), AcquiredNs: acquired.UnixNano(), EndedNs: acquired.Add(t).UnixNano(), End: "expired"})
					time.Sleep(t + 400*time.Millisecond)
					continue
				}
				time.Sleep(h)
				ended := time.Now()
				ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
				err = release(ctx)
				cancel()
				if err != nil {
					fmt.Fprintln(os.Stderr, "churn: release:", err)
				}
				log(record{Key: key, Value: value, StartedNs: started.UnixNano(), AcquiredNs: acquired.UnixNano(), EndedNs: ended.UnixNano(), End: "released"})
				time.Sleep(*pause)
			}
		}()
	}
	wg.Wait()
	out.Flush()
}

// resolve returns addr, or for NAME@S1+S2 the master the first answering sentinel names.
func resolve(addr string) (string, error) {
	name, sentinels, ok := strings.Cut(addr, "@")
	if !ok {
		return addr, nil
	}
	var last error
	for _, s := range strings.Split(sentinels, "+") {
		c, err := redis.Dial("tcp", s, redis.DialConnectTimeout(time.Second),
			redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
		if err != nil {
			last = err
			continue
		}
		hp, err := redis.Strings(c.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name))
		c.Close()
		if err == nil && len(hp) == 2 {
			return hp[0] + ":" + hp[1], nil
		}
		last = fmt.Errorf("sentinel %s: %v %v", s, hp, err)
	}
	return "", fmt.Errorf("no sentinel of %s named its master: %v", name, last)
}

// barrier starts the attempts of the workers sharing a key together (-race-start).
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int // the key's workers
	waiting int
	round   int
	goOn    bool
	end     time.Time
}

// wait returns when all n workers called it, true while the run has time left (the
// last to arrive decides, for all of them).
func (b *barrier) wait() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cond == nil {
		b.cond = sync.NewCond(&b.mu)
	}
	round := b.round
	if b.waiting++; b.waiting == b.n {
		b.waiting, b.round, b.goOn = 0, b.round+1, time.Now().Before(b.end)
		b.cond.Broadcast()
		return b.goOn
	}
	for round == b.round {
		b.cond.Wait()
	}
	return b.goOn
}

type redsyncLocker struct {
	rs      *redsync.Redsync
	masters int
}

func (l redsyncLocker) acquire(ctx context.Context, key string, ttl time.Duration) (string, func(context.Context) error, int, error) {
	// redsync sets the mutex's value only on success: the attempt's value is captured
	// where it is generated (as redsync does it: 16 random bytes, base64).
	var value string
	gen := func() (string, error) {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		value = base64.StdEncoding.EncodeToString(b)
		return value, nil
	}
	m := l.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1), redsync.WithGenValueFunc(gen))
	if err := m.LockContext(ctx); err != nil {
		return value, nil, redsyncReached(err, l.masters), err
	}
	return m.Value(), func(ctx context.Context) error {
		_, err := m.UnlockContext(ctx)
		return err
	}, 0, nil
}

// redsyncReached is how many of masters a failed redsync attempt's SET succeeded on,
// from its error (v4.18.1: one try's per-master errors joined, ErrNodeTaken where the
// key was taken, RedisError where a master failed; ErrTaken, naming only the taken
// ones, once they are a quorum), or -1 where the error does not say (ErrFailed: a
// quorum said OK after the validity was used up).
func redsyncReached(err error, masters int) int {
	var all *redsync.ErrTaken
	if errors.As(err, &all) {
		return masters - len(all.Nodes)
	}
	lost := map[int]bool{}
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *redsync.ErrNodeTaken:
			lost[e.Node] = true
		case *redsync.RedisError:
			lost[e.Node] = true
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	if len(lost) == 0 {
		return -1
	}
	return masters - len(lost)
}

type redlockLocker struct{ c *redlock.Client }

func (l redlockLocker) acquire(ctx context.Context, key string, ttl time.Duration) (string, func(context.Context) error, int, error) {
	lock, err := l.c.Acquire(ctx, key, ttl)
	if err != nil {
		// The QuorumError says what each master did with the (last) attempt's SET.
		var qe *redlock.QuorumError
		if errors.As(err, &qe) && len(qe.Result.Nodes) > 0 {
			return "", nil, qe.Result.Count(redlock.OK), err
		}
		return "", nil, -1, err
	}
	return lock.Value(), func(ctx context.Context) error { return l.c.Release(ctx, lock) }, 0, nil
}

// doWorker is -mode do: each cycle is one Client.Do whose fn holds the lock -hold while
// Do extends it every ttl/3. Every -overrun-every-th cycle goes through the overrunner,
// a client that extends a lock twice at most: fn outlives the lock, its context is
// cancelled at the lock's deadline, and it returns half a TTL later, when the masters
// have let the key expire (Do's release then finds nothing).
type doWorker struct {
	c, overrunner *redlock.Client
	hold, ttl     time.Duration
	every         int
	end           time.Time
	log           func(record)
}

func (d doWorker) loop(key string) {
	for cycle := 1; time.Now().Before(d.end); cycle++ {
		overrun := d.every > 0 && cycle%d.every == 0
		c := d.c
		if overrun {
			c = d.overrunner
		}
		r := record{Key: key}
		var deadline time.Time
		started := time.Now()
		err := c.Do(context.Background(), key, d.ttl, func(ctx context.Context) error {
			l := redlock.LockFrom(ctx)
			r.Value, r.AcquiredNs = l.Value(), time.Now().UnixNano()
			if !overrun {
				time.Sleep(d.hold) // a job that does not watch its context: a lost lock shows in Do's error
				r.EndedNs = time.Now().UnixNano()
				return nil
			}
			// The lock's deadline is the last one Do set before it cancelled ctx (it
			// clears it then): read it until the cancellation.
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for deadline = l.Until(); ; {
				select {
				case <-ctx.Done():
					time.Sleep(d.ttl / 2)
					return nil
				case <-tick.C:
					if u := l.Until(); !u.IsZero() {
						deadline = u
					}
				}
			}
		})
		r.StartedNs = started.UnixNano()
		switch {
		case r.Value == "":
			r.End, r.EndedNs = "failed", time.Now().UnixNano()
			fmt.Fprintln(os.Stderr, "churn: do:", err)
			d.log(r)
			time.Sleep(d.ttl + 400*time.Millisecond)
			continue
		case overrun && errors.Is(err, redlock.ErrLockLost):
			r.End, r.EndedNs = "expired", deadline.UnixNano()
		case overrun:
			r.End, r.EndedNs = "lost", time.Now().UnixNano()
			fmt.Fprintf(os.Stderr, "churn: do: %s overran its lock, yet Do returned %v (want ErrLockLost)\n", key, err)
		case err != nil:
			// Lost while held (a starved keep-alive): expired or released, whichever
			// reached the masters first; the log cannot say which.
			r.End = "lost"
			fmt.Fprintln(os.Stderr, "churn: do:", err)
		default:
			r.End = "released"
		}
		d.log(r)
	}
}

// runWorker is -mode run: each cycle is one `redlockctl run KEY --ttl TTL -- sh -c ...`
// (the real binary), whose job prints the lock's value (REDLOCK_VALUE) when it starts,
// sleeps -hold and prints "end" before it exits; the worker logs the job's start as
// acquired_ns and its end as ended_ns (run releases the lock when its job has exited).
type runWorker struct {
	bin, config string
	hold, ttl   time.Duration
	end         time.Time
	log         func(record)
}

// job is run's command: the lock's value, then -hold, then "end".
const job = `echo "$REDLOCK_VALUE"; sleep "$1"; echo end`

func (rw runWorker) loop(key string) {
	for time.Now().Before(rw.end) {
		r := record{Key: key}
		cmd := exec.Command(rw.bin, "run", key, "--config", rw.config, "--ttl", rw.ttl.String(),
			"--", "sh", "-c", job, "sh", fmt.Sprintf("%.3f", rw.hold.Seconds()))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err == nil {
			r.StartedNs = time.Now().UnixNano()
			err = cmd.Start()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "churn: run:", err)
			os.Exit(1)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			switch line := sc.Text(); {
			case r.Value == "":
				r.Value, r.AcquiredNs = line, time.Now().UnixNano()
			case line == "end":
				r.EndedNs = time.Now().UnixNano()
			}
		}
		err = cmd.Wait()
		switch {
		case err == nil && r.Value != "" && r.EndedNs != 0:
			r.End = "released"
		case r.Value == "":
			r.End, r.EndedNs = "failed", time.Now().UnixNano()
		default:
			r.End = "lost"
			if r.EndedNs == 0 {
				r.EndedNs = time.Now().UnixNano()
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "churn: run %s: %v: %s", key, err, stderr.String())
		}
		rw.log(r)
		if r.End == "failed" {
			time.Sleep(rw.ttl + 400*time.Millisecond)
		}
	}
}
