package topology

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Dialer opens an authenticated connection to addr, bounded by ctx. The connections it
// returns must honour per-call contexts (those of redis.DialContext do).
type Dialer func(ctx context.Context, addr string) (redis.Conn, error)

// SentinelAnswer is what one sentinel said when asked for a group's master.
type SentinelAnswer struct {
	Sentinel string // the sentinel's address
	Addr     string // the master address it reported ("" on error)
	Err      error  // why there is no address: unreachable, refused, or the name is unknown
}

// ErrUnknownMaster is the Err of a SentinelAnswer from a sentinel that does not monitor
// the master name.
var ErrUnknownMaster = errors.New("sentinel does not monitor this master name")

// AskSentinels asks every sentinel at once for the address of the master monitored as
// name (SENTINEL GET-MASTER-ADDR-BY-NAME) and returns their answers in the order given.
// A sentinel that has not answered when ctx ends has ctx's error.
func AskSentinels(ctx context.Context, dial Dialer, sentinels []string, name string) []SentinelAnswer {
	return ask(ctx, dial, sentinels, name, false)
}

// AskSentinelsMajority is AskSentinels, but it returns as soon as more than half of
// the sentinels reported the same address (the answers of those still silent then
// are errors saying so), and, when ctx has a deadline, gives them half of the time
// left: a hung sentinel leaves the caller time to check the address it got.
func AskSentinelsMajority(ctx context.Context, dial Dialer, sentinels []string, name string) []SentinelAnswer {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	return ask(ctx, dial, sentinels, name, true)
}

// errNotWaited is the answer of a sentinel still silent when a majority had agreed.
var errNotWaited = errors.New("no answer yet when a majority of sentinels had agreed")

// ask asks every sentinel at once; with majority it returns as soon as more than half
// of them reported the same address (the others' answers are errNotWaited).
func ask(ctx context.Context, dial Dialer, sentinels []string, name string, majority bool) []SentinelAnswer {
	type result struct {
		i int
		a SentinelAnswer
	}
	results := make(chan result, len(sentinels))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the late askers give up at once; their results go to the buffer
	for i, s := range sentinels {
		go func() {
			addr, err := askSentinel(ctx, dial, s, name)
			results <- result{i, SentinelAnswer{Sentinel: s, Addr: addr, Err: err}}
		}()
	}
	answers := make([]SentinelAnswer, len(sentinels))
	for i, s := range sentinels {
		answers[i] = SentinelAnswer{Sentinel: s, Err: errNotWaited}
	}
	votes := map[string]int{}
	for range sentinels {
		r := <-results
		answers[r.i] = r.a
		if r.a.Err != nil {
			continue
		}
		votes[r.a.Addr]++
		if majority && votes[r.a.Addr] > len(sentinels)/2 {
			break
		}
	}
	return answers
}

func askSentinel(ctx context.Context, dial Dialer, sentinel, name string) (string, error) {
	conn, err := dial(ctx, sentinel)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	v, err := redis.Strings(redis.DoContext(conn, ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name))
	if errors.Is(err, redis.ErrNil) || err == nil && len(v) == 0 {
		return "", ErrUnknownMaster
	}
	if err != nil {
		return "", err
	}
	if len(v) != 2 {
		return "", fmt.Errorf("unexpected reply %q", v)
	}
	return net.JoinHostPort(v[0], v[1]), nil
}

// Role returns the first element of ROLE: "master", "slave" or "sentinel".
func Role(ctx context.Context, conn redis.Conn) (string, error) {
	v, err := redis.Values(redis.DoContext(conn, ctx, "ROLE"))
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", errors.New("empty ROLE reply")
	}
	return redis.String(v[0], nil)
}

// ResolveMaster returns the address of the current master of the Sentinel group name:
// it asks every sentinel (as AskSentinels, but it stops waiting once more than half of
// them agree on an address), then tries the reported addresses, the one
// reported by most sentinels first, and returns the first whose ROLE says master,
// checked on a connection from dialNode. It never trusts an unconfirmed address. When
// ctx has a deadline, the sentinels get half of the time left (see
// AskSentinelsMajority), so that one hung sentinel leaves time for the ROLE check. The answers are returned too, for
// diagnosis; the error says what each sentinel and candidate did.
func ResolveMaster(ctx context.Context, sentinels []string, name string, dialSentinel, dialNode Dialer) (string, []SentinelAnswer, error) {
	if len(sentinels) == 0 {
		return "", nil, fmt.Errorf("sentinel group %q: no sentinels given", name)
	}
	answers := AskSentinelsMajority(ctx, dialSentinel, sentinels, name)
	votes := map[string]int{}
	var order []string
	for _, a := range answers {
		if a.Err != nil {
			continue
		}
		if votes[a.Addr] == 0 {
			order = append(order, a.Addr)
		}
		votes[a.Addr]++
	}
	// Most votes first; ties keep the order of the sentinels list.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && votes[order[j]] > votes[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	var why []string
	for _, a := range answers {
		if a.Err != nil {
			why = append(why, fmt.Sprintf("sentinel %s: %v", a.Sentinel, a.Err))
		}
	}
	for _, addr := range order {
		role, err := confirm(ctx, dialNode, addr)
		if err == nil && role == "master" {
			return addr, answers, nil
		}
		if err != nil {
			why = append(why, fmt.Sprintf("%s (reported by %d): %v", addr, votes[addr], err))
		} else {
			why = append(why, fmt.Sprintf("%s (reported by %d): ROLE %s", addr, votes[addr], role))
		}
	}
	return "", answers, fmt.Errorf("sentinel group %q: no confirmed master: %s", name, strings.Join(why, "; "))
}

func confirm(ctx context.Context, dial Dialer, addr string) (string, error) {
	conn, err := dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return Role(ctx, conn)
}
