package live

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// A feed whose tracker waits on no mark marks each subscription every markIdle, not
// every markEvery: each PING wakes an idle server, and twenty a second were most of
// what the feed cost a fleet whose locks change a few times a second.
func TestIdleFeedMarksSeldom(t *testing.T) {
	servers := redistest.StartN(t, 1, redistest.Options{})
	r := startFeed(t, servers)
	before := pings(t, servers[0])
	const span = 3 * time.Second
	time.Sleep(span)
	got := pings(t, servers[0]) - before
	// A mark every markIdle, and the tracking connection's heartbeat.
	if most := int64(span/markIdle+span/heartbeat) + 2; got > most {
		t.Errorf("%d PINGs in %v on an idle master, want at most %d (a mark every %v, a heartbeat every %v)", got, span, most, markIdle, heartbeat)
	}
	if got == 0 {
		t.Errorf("no PING in %v: the subscription is not marked at all", span)
	}
	r.stop()
}

// A decision that waits on a mark asks for one (caughtUp): MarkWanted names the time
// a mark must be sent after, and WantsMoved says so once.
func TestWaitingDecisionWantsAMark(t *testing.T) {
	tr, _ := newTestTracker(3)
	t0 := time.Unix(1000, 0)
	tr.Mark(1, t0)
	if tr.caughtUp(1, t0.Add(time.Millisecond).UnixNano()) {
		t.Fatal("caught up past its mark")
	}
	if after, _ := tr.MarkWanted(1); after != t0.Add(time.Millisecond).UnixNano() {
		t.Errorf("mark wanted after %v, want %v", time.Unix(0, after), t0.Add(time.Millisecond))
	}
	if !tr.WantsMoved() || tr.WantsMoved() {
		t.Error("WantsMoved: want true once, then false")
	}
	if after, _ := tr.MarkWanted(0); after != 0 {
		t.Errorf("master 0: a mark wanted after %v, want none", time.Unix(0, after))
	}
}

// pings returns the PING commands s has served (INFO commandstats).
func pings(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	info, err := redis.String(s.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_ping:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}
