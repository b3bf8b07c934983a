package locks

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"
)

// decodeRedissonPermitSemaphore recognises Redisson's RPermitExpirableSemaphore,
// verified against redisson/redisson RedissonPermitExpirableSemaphore.java
// (tryAcquireAsync, tryReleaseAsync, trySetPermitsAsync) and ServiceManager.java
// (generateId) at commit 017b8306b450d6970ef7a5244e89c1c14bbab571. The semaphore's
// name holds its available permits as an integer; suffixName(name, "timeout"),
// `{<name>}:timeout`, is a sorted set of the acquired permits, each a permit id of 16
// random bytes (the hex id its caller sees, decoded) scored by its expiry in epoch ms,
// or 922337203685477 for a permit acquired without a lease. Release is ZREM of the
// permit, INCRBY of the name and a PUBLISH of the new count on `redisson_sc:{<name>}`.
//
// The sorted set is the evidence: a key ending ":timeout" whose members are all 16
// bytes scored as Redisson scores them. The name's integer alone is no evidence (a
// plain RSemaphore writes only that, as any counter does), so a plain RSemaphore is
// left unknown. The lock is read-only here: releasing a permit also increments the
// name's count, which only the holder knows to do once.
func decodeRedissonPermitSemaphore(in *input) (Lock, bool) {
	name, ok := redissonTimeoutName(in.Key)
	if !ok || in.Truncated || len(in.Items) == 0 {
		return Lock{}, false
	}
	leased := true
	for i, m := range in.Items {
		switch {
		case len(m) != 16:
			return Lock{}, false
		case in.Scores[i] == redissonNoLease:
			leased = false
		case !epochMs(in.Scores[i]):
			return Lock{}, false
		}
	}
	holders := slices.Clone(in.Items)
	slices.Sort(holders)
	l := Lock{
		Library:  Redisson,
		Kind:     "permit-expirable-semaphore",
		Evidence: "sorted set {<name>}:timeout of 16-byte permit ids scored by expiry in epoch ms, as Redisson's RPermitExpirableSemaphore writes it",
		Holder:   strings.Join(holders, ","),
		Owner:    "permit " + hex.EncodeToString([]byte(holders[0])),
		Permits:  len(in.Items),
		Renewal:  "updateLeaseTime(permitId): ZADD of the permit's new expiry, called by the application; an expired permit is pruned (and its count given back) by the next call",
		Release: unsupported("Redisson releases a permit with ZREM from " + in.Key + ", INCRBY " + name +
			" and PUBLISH redisson_sc:{…}: release it with RPermitExpirableSemaphore.release(permitId), which gives the permit back once"),
	}
	if len(holders) > 1 {
		l.Owner += " and " + strconv.Itoa(len(holders)-1) + " more"
	}
	l.LeasedMembers = leased
	for i, m := range in.Items {
		what := "no lease: held until released"
		if in.Scores[i] != redissonNoLease {
			at := time.UnixMilli(int64(in.Scores[i])).UTC()
			what = "expires " + at.Format(time.RFC3339Nano)
			if !in.now.IsZero() && at.Before(in.now) {
				what += " (past: Redisson gives it back at the semaphore's next call)"
			}
		}
		l.Fields = append(l.Fields, Field{"permit " + hex.EncodeToString([]byte(m)), what})
	}
	l.Fields = append(l.Fields, Field{"available permits", "in " + name + " (a counter of its own)"})
	return l, true
}

// redissonNoLease is RPermitExpirableSemaphore's score for a permit without a lease.
const redissonNoLease = 922337203685477

// redissonTimeoutName inverts suffixName(name, "timeout"): "{a}:timeout" is the
// timeout set of a; a name with a brace keeps it ("x{a}:timeout" is x{a}'s).
func redissonTimeoutName(key string) (string, bool) {
	rest, ok := strings.CutSuffix(key, ":timeout")
	if !ok || !strings.Contains(rest, "{") {
		return "", false
	}
	if len(rest) > 2 && rest[0] == '{' && rest[len(rest)-1] == '}' && !strings.ContainsAny(rest[1:len(rest)-1], "{}") {
		return rest[1 : len(rest)-1], true
	}
	return rest, true
}
