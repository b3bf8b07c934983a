package history

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// crashChild is the environment variable that makes the test binary a recorder
// writing to the store in its value's directory, at 5,000 lifecycles a second,
// until it is killed (see TestSIGKILLLosesAtMostTheLastSecond).
const crashChild = "HISTORY_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChild); dir != "" {
		os.Exit(crashWriter(dir, os.Getenv("HISTORY_CRASH_ROUND")))
	}
	if dir := os.Getenv(feedChild); dir != "" {
		os.Exit(feedRecorder(dir, strings.Split(os.Getenv("HISTORY_FEED_ADDRS"), ",")))
	}
	code := m.Run()
	stopBenchPG()
	printBenchRows()
	os.Exit(code)
}

// crashWriter records lifecycles "ROUND-i", each held 5 ms and ended now, 50
// every 10 ms, and prints "i unixnano" after every 100th is given to the recorder.
func crashWriter(dir, round string) int {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r, err := NewRecorder(s, RecorderOptions{Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go r.Run(context.Background())
	out := bufio.NewWriter(os.Stdout)
	tick := time.NewTicker(10 * time.Millisecond)
	for i := 0; ; {
		<-tick.C
		for range 50 {
			now := time.Now()
			v := fmt.Sprintf("%s-%d", round, i)
			res := fmt.Sprintf("job:%d", i%1000)
			r.Observe(live.Event{At: now.Add(-5 * time.Millisecond), Event: live.Acquired, Resource: res, Key: "lock:" + res, Value: v, Masters: 3, Quorum: 2})
			r.Observe(live.Event{At: now, Event: live.Released, Resource: res, Key: "lock:" + res, Value: v, Masters: 3, Quorum: 2, Owner: "w", Library: "redlockctl"})
			i++
			if i%100 == 0 {
				fmt.Fprintf(out, "%d %d\n", i, now.UnixNano())
				out.Flush()
			}
		}
	}
}

// TestSIGKILLLosesAtMostTheLastSecond kills a recorder writing under load at random
// instants, again and again on one store: each time the store opens, passes bbolt's
// consistency check, and holds every lifecycle that ended up to a second (plus the
// write's own time) before the kill.
func TestSIGKILLLosesAtMostTheLastSecond(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	worst := time.Duration(0)
	for round := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChild+"="+dir, "HISTORY_CRASH_ROUND="+strconv.Itoa(round))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		progress := make(chan [2]int64, 1<<16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var i, at int64
				if _, err := fmt.Sscan(sc.Text(), &i, &at); err == nil {
					progress <- [2]int64{i, at}
				}
			}
			close(progress)
		}()
		time.Sleep(1500*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Second))))
		killed := time.Now()
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		var sent [][2]int64
		for p := range progress {
			sent = append(sent, p)
		}
		if len(sent) == 0 {
			t.Fatalf("round %d: the writer reported nothing", round)
		}

		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		if err := s.eng.(*boltEngine).db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		}); err != nil {
			t.Fatalf("round %d: the store is corrupt: %v", round, err)
		}
		r, err := s.Lifecycles(Filter{}, time.Now())
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		have := map[int]bool{}
		prefix := fmt.Sprintf("%d-", round)
		for _, l := range r.Lifecycles {
			if i, ok := strings.CutPrefix(l.Value, prefix); ok {
				n, _ := strconv.Atoi(i)
				have[n] = true
			}
		}
		// Every lifecycle the writer had given by killed-1s-(a second for the
		// write itself: fsync on a shared disk) is there, and those kept are a
		// prefix of what it gave.
		missingFrom := -1
		for i := 0; i < int(sent[len(sent)-1][0]); i++ {
			if !have[i] {
				missingFrom = i
				break
			}
		}
		if missingFrom < 0 {
			missingFrom = int(sent[len(sent)-1][0])
		}
		for i := missingFrom; i < missingFrom+100000; i++ {
			if have[i] {
				t.Fatalf("round %d: lifecycle %d missing but %d kept: not a prefix", round, missingFrom, i)
			}
		}
		var lostSince time.Time
		for _, p := range sent {
			if p[0] > int64(missingFrom) {
				lostSince = time.Unix(0, p[1])
				break
			}
		}
		if !lostSince.IsZero() {
			lost := killed.Sub(lostSince)
			worst = max(worst, lost)
			if lost > FlushEvery+time.Second {
				t.Errorf("round %d: lost the lifecycles of the last %v before the kill (kept %d)", round, lost, missingFrom)
			}
		}
		s.Close()
	}
	t.Logf("the most lost: the last %v before a kill", worst)
}
