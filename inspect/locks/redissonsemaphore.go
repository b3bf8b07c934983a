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
// (generateId) at commit 017b8306b450d6970ef7a5244e89c1c14bbab571, and again at
// 66863978b4a92093b97c1f8c96f182a77e81d50e (same keys, members and scores). The semaphore's
// name holds its available permits as an integer; suffixName(name, "timeout"),
// `{<name>}:timeout`, is a sorted set of the acquired permits, each a permit id of 16
// random bytes (the hex id its caller sees, decoded) scored by its expiry in epoch ms,
// or 922337203685477 for a permit acquired without a lease. Release is ZREM of the
// permit, INCRBY of the name and a PUBLISH of the new count on `redisson_sc:{<name>}`.
//
// The sorted set is the evidence: a key ending ":timeout" whose members are all 16
// bytes scored as Redisson scores them. The name's integer alone is no evidence (a
// plain RSemaphore writes only that, as any counter does), so a plain RSemaphore is
// left unknown; beside the set, the name is its permit count, a companion the poller
// reads (see Related) and folds into the set's row. The lock is read-only here:
// releasing a permit also increments the name's count, which only the holder knows to
// do once.
func decodeRedissonPermitSemaphore(in input) (Lock, bool) {
	names, ok := redissonTimeoutNames(in.Key)
	if !ok || !isRedissonPermitSet(in.Entry) {
		return Lock{}, false
	}
	holders := slices.Clone(in.Items)
	slices.Sort(holders)
	count, available := redissonPermitCount(in, names)
	l := Lock{
		Library:  Redisson,
		Kind:     "permit-expirable-semaphore",
		Evidence: "sorted set {<name>}:timeout of 16-byte permit ids scored by expiry in epoch ms, as Redisson's RPermitExpirableSemaphore writes it",
		Holder:   strings.Join(holders, ","),
		Owner:    "permit " + hex.EncodeToString([]byte(holders[0])),
		Permits:  len(in.Items),
		Renewal:  "updateLeaseTime(permitId): ZADD of the permit's new expiry, called by the application; an expired permit is pruned (and its count given back) by the next call",
		Release: unsupported("Redisson releases a permit with ZREM from " + in.Key + ", INCRBY " + count +
			" and PUBLISH redisson_sc:{…}: release it with RPermitExpirableSemaphore.release(permitId), which gives the permit back once"),
	}
	if len(holders) > 1 {
		l.Owner += " and " + strconv.Itoa(len(holders)-1) + " more"
	}
	l.LeasedMembers = !slices.Contains(in.Scores, redissonNoLease)
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
	if available == nil {
		l.Fields = append(l.Fields, Field{"available permits", "in " + count + " (not read)"})
		return l, true
	}
	l.Available = available
	l.Fields = append(l.Fields, Field{"available permits", strconv.Itoa(*available)})
	l.Companions = []Companion{{Key: count, Role: RolePermitCount, Type: TypeString}}
	return l, true
}

// isRedissonPermitSet reports whether a sorted set holds what an
// RPermitExpirableSemaphore's timeout set holds: whole (not truncated), not empty,
// permit ids of 16 bytes scored by an expiry in epoch ms or redissonNoLease.
func isRedissonPermitSet(e Entry) bool {
	if e.Type != TypeZSet || e.Truncated || len(e.Items) == 0 || len(e.Scores) != len(e.Items) {
		return false
	}
	for i, m := range e.Items {
		if len(m) != 16 || e.Scores[i] != redissonNoLease && !epochMs(e.Scores[i]) {
			return false
		}
	}
	return true
}

// redissonPermitCount returns the key of the semaphore's permit count, the first of
// names that the poller read holding an integer, and that integer (nil, and the most
// likely name, when none did).
func redissonPermitCount(in input, names []string) (string, *int) {
	for _, n := range names {
		c := in.rel(n)
		if c.Type != TypeString {
			continue
		}
		if v, err := strconv.Atoi(c.Value); err == nil {
			return n, &v
		}
	}
	return names[0], nil
}

// redissonPermitCompanions returns the keys an RPermitExpirableSemaphore's timeout
// set e may have its permit count at (see Related), none when e is no such set.
func redissonPermitCompanions(e Entry) []Companion {
	names, ok := redissonTimeoutNames(e.Key)
	if !ok || !isRedissonPermitSet(e) {
		return nil
	}
	cs := make([]Companion, len(names))
	for i, n := range names {
		cs[i] = Companion{Key: n, Role: RolePermitCount, Type: TypeString}
	}
	return cs
}

// redissonNoLease is RPermitExpirableSemaphore's score for a permit without a lease.
const redissonNoLease = 922337203685477

// redissonTimeoutNames inverts suffixName(name, "timeout"): the names whose timeout
// set is key, most likely first. "{a}:timeout" is a's (or, less likely, {a}'s); a name
// with a brace keeps it ("x{a}:timeout" is x{a}'s).
func redissonTimeoutNames(key string) ([]string, bool) {
	rest, ok := strings.CutSuffix(key, ":timeout")
	if !ok || !strings.Contains(rest, "{") {
		return nil, false
	}
	return redissonNames(rest), true
}
