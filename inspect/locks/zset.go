package locks

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Sorted-set locks and semaphores keep each holder as a member, scored by its expiry
// or its acquisition time. The row's holder is the members, sorted and joined by ",";
// the lock is held while the key lives (every one of these libraries sets the key's
// expiry to its last member's). The release removes exactly the observed members, each
// only where it is still a member (see zremRelease).

// decodeZSet recognises the sorted-set locks: Symfony Lock's RedisStore, Symfony
// Semaphore's RedisStore, redis-semaphore's semaphores and Redisson's
// RPermitExpirableSemaphore. Another sorted set is
// foreign.
func decodeZSet(in input) Lock {
	for _, d := range []func(input) (Lock, bool){decodeRedisSemaphoreSet, decodeSymfonySemaphore, decodeSymfonyLock, decodeRedissonPermitSemaphore} {
		if l, ok := d(in); ok {
			return l
		}
	}
	return Lock{Library: Unknown, Foreign: "a zset that no decoder recognises as a lock or semaphore"}
}

// decodeSymfonyLock recognises Symfony Lock's RedisStore (symfony/lock 5.2 and later):
// the resource name itself is a sorted set whose members are the holders' tokens,
// base64 of 32 random bytes, scored by each one's expiry in epoch milliseconds; an
// exclusive (write) lock also holds the member "__write__" with its holder's score.
// Shared (read) locks are several tokens without "__write__". CombinedStore writes the
// same on each of its stores. Verified against Symfony/Component/Lock/Store/
// RedisStore.php (save, saveRead, putOffExpiration, delete, getUniqueToken) of
// php-symfony-lock 5.4.53 (Debian bookworm). Its delete is ZREM of the token and of
// "__write__", then PEXPIREAT to the latest remaining expiry.
func decodeSymfonyLock(in input) (Lock, bool) {
	if in.Truncated || len(in.Items) == 0 {
		return Lock{}, false
	}
	var tokens []string
	write := false
	for i, m := range in.Items {
		switch {
		case m == symfonyWrite:
			write = true
		case isSymfonyToken(m) && epochMs(in.Scores[i]):
			tokens = append(tokens, m)
		default:
			return Lock{}, false
		}
	}
	if len(tokens) == 0 || write && len(tokens) != 1 {
		return Lock{}, false
	}
	kind := "shared"
	if write {
		kind = "exclusive"
	}
	l := setLock(in, SymfonyLock, kind, "sorted set of base64 tokens (32 bytes) scored by expiry in epoch ms, as Symfony Lock's RedisStore writes it", tokens, 1e-3, false)
	l.Renewal = "refresh(): owner-checked ZADD of its token's new expiry and PEXPIREAT, called by the application; never re-creates"
	extra := []string{}
	if write {
		extra = append(extra, symfonyWrite)
	}
	l.Release = zremRelease([]string{in.Key}, tokens, extra, "remove the holder's token (and __write__) from the sorted set, as Symfony's delete does")
	return l, true
}

// decodeSymfonySemaphore recognises Symfony Semaphore's RedisStore: `{<name>}:time`, a
// sorted set of the holders' tokens (base64 of 32 bytes) scored by expiry in epoch
// seconds, and its sibling `{<name>}:weight` scoring the same tokens by weight (a
// companion). Verified against Symfony/Component/Semaphore/Store/RedisStore.php (save,
// putOffExpiration, delete, getUniqueToken) of php-symfony-semaphore 5.4.53 (Debian
// bookworm). Its delete is ZREM of the token from both sets.
func decodeSymfonySemaphore(in input) (Lock, bool) {
	name, ok := strings.CutSuffix(in.Key, "}:time")
	if !ok || !strings.HasPrefix(name, "{") || len(name) < 2 || in.Truncated || len(in.Items) == 0 {
		return Lock{}, false
	}
	for i, m := range in.Items {
		if !isSymfonyToken(m) || !epochS(in.Scores[i]) {
			return Lock{}, false
		}
	}
	weight := name + "}:weight"
	l := setLock(in, SymfonySemaphore, "semaphore", "sorted set {<name>}:time of base64 tokens (32 bytes) scored by expiry in epoch seconds, as Symfony Semaphore's RedisStore writes it", in.Items, 1, false)
	l.Companions = []Companion{{Key: weight, Role: RoleSemaphoreWeights, Type: TypeZSet}}
	l.Permits = len(in.Items) // holders: each one's weight is in the sibling set
	l.Renewal = "refresh(): ZADD of its token's new expiry and EXPIREAT of both sets, called by the application"
	l.Release = zremRelease([]string{in.Key, weight}, in.Items, nil, "remove the holders' tokens from "+in.Key+" and "+weight+", as Symfony's delete does")
	return l, true
}

// decodeRedisSemaphoreSet recognises redis-semaphore's RedisSemaphore, RedlockSemaphore
// and (members <uuid>_<n>) its multi-semaphores: `semaphore:<name>`, members the
// holders' identifiers (a UUIDv4, maybe with a suffix), scored by acquisition time in
// epoch ms (see redissemaphore.go). Its release is ZREM of the identifier.
func decodeRedisSemaphoreSet(in input) (Lock, bool) {
	if !hasPrefix(in.Key, "semaphore:") || in.Truncated || len(in.Items) == 0 {
		return Lock{}, false
	}
	for i, m := range in.Items {
		if len(m) < 36 || !isUUID(m[:36]) || len(m) > 36 && m[36] != '-' && m[36] != '_' || !epochMs(in.Scores[i]) {
			return Lock{}, false
		}
	}
	l := setLock(in, RedisSemaphore, "semaphore", "sorted set semaphore:<name> of UUIDv4 identifiers scored by acquisition time in epoch ms, as redis-semaphore writes it", in.Items, 1e-3, true)
	l.Renewal = redisSemaphoreRenewal
	l.Permits = len(in.Items)
	l.Release = zremRelease([]string{in.Key}, in.Items, nil, "remove the holders' identifiers from the sorted set, as redis-semaphore's release does")
	return l, true
}

// setLock fills what the sorted-set locks share: the holder is the sorted members;
// Fields show each member's expiry (score×unit seconds), or its acquisition time when
// acquired is set.
func setLock(in input, lib, kind, evidence string, members []string, unit float64, acquired bool) Lock {
	holders := slices.Clone(members)
	slices.Sort(holders)
	l := Lock{Library: lib, Kind: kind, Evidence: evidence, Holder: strings.Join(holders, ","), Owner: holders[0]}
	if len(holders) > 1 {
		l.Owner = fmt.Sprintf("%s and %d more", holders[0], len(holders)-1)
	}
	for i, m := range in.Items {
		if !slices.Contains(members, m) {
			continue
		}
		at := time.UnixMilli(int64(math.Round(in.Scores[i] * unit * 1000)))
		what := "expires " + at.UTC().Format(time.RFC3339Nano)
		if acquired {
			what = "acquired " + at.UTC().Format(time.RFC3339Nano)
		}
		if !in.now.IsZero() && !acquired && at.Before(in.now) {
			what += " (past: the library prunes it at its next call)"
		}
		l.Fields = append(l.Fields, Field{"holder " + m, what})
	}
	return l
}

const symfonyWrite = "__write__"

// isSymfonyToken reports whether m is base64 (standard, padded) of 32 bytes.
func isSymfonyToken(m string) bool {
	return len(m) == 44 && m[43] == '=' && isBase64(m[:43], b64Std, 32)
}

// epochMs and epochS report whether a score is a plausible instant (2001 to 2286) in
// epoch milliseconds or seconds.
func epochMs(f float64) bool { return f >= 1e12 && f < 1e13 }
func epochS(f float64) bool  { return f >= 1e9 && f < 1e10 }

// zremRelease removes members from the sorted set keys[0] (and from the other keys, the
// library's sibling sets) where each is still a member, plus extra (a marker such as
// Symfony's __write__) once one was. Checked returns ReplyDone when a member was
// removed, ReplyTaken when the set holds none of them, ReplyAbsent when there is no
// set. Any is the same: a sorted-set lock is released by its members, never by
// deleting the key others may hold a place in.
func zremRelease(keys, members, extra []string, summary string) Release {
	args := append([]string{fmt.Sprint(len(members))}, members...)
	args = append(args, extra...)
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "EVAL zrem: TYPE %q; for each of", keys[0])
	for _, m := range members {
		fmt.Fprintf(&cmd, " %q", m)
	}
	fmt.Fprintf(&cmd, " that ZSCORE %q <member> finds:", keys[0])
	for _, k := range keys {
		fmt.Fprintf(&cmd, " ZREM %q <member>;", k)
	}
	for _, x := range extra {
		fmt.Fprintf(&cmd, " then ZREM %q %q", keys[0], x)
	}
	s := Script{Lua: luaZRem, Keys: keys, Args: args, Command: strings.TrimSuffix(cmd.String(), ";")}
	return Release{Protocol: ProtoZRem, Summary: summary, Checked: s, Any: s}
}

// luaZRem: ARGV[1] is the number of members, then the members, then the extras.
const luaZRem = `if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
  return 0
end
local n = tonumber(ARGV[1])
local done = 0
for i = 2, n + 1 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    for k = 1, #KEYS do redis.call('ZREM', KEYS[k], ARGV[i]) end
    done = 1
  end
end
if done == 0 then return -1 end
for i = n + 2, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
return 1`
