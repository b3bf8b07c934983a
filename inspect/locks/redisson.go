package locks

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// decodeRedisson recognises Redisson's hash locks. The key is the lock's name; each
// holder is a field `<uuid>:<threadId>` (the client's UUID, the Java thread id) whose
// value is its reentrancy count. Verified against redisson/redisson at commit
// 66863978b4a92093b97c1f8c96f182a77e81d50e, in redisson/src/main/java/org/redisson/:
//   - RedissonLock.java, RedissonBaseLock.java (getLockName, unlock latch): kind "lock",
//     one holder field; waiters listen on redisson_lock__channel:{name} for message 0
//     (pubsub/LockPubSub.java UNLOCK_MESSAGE).
//   - RedissonFairLock.java: kind "fair-lock", the same hash plus the list
//     redisson_lock_queue:{name} (waiters in order) and the sorted set
//     redisson_lock_timeout:{name} (each waiter's deadline, client epoch ms); each waiter
//     listens on its own channel redisson_lock__channel:{name}:<uuid>:<threadId>, and an
//     unlock wakes only the first one in the queue.
//   - RedissonReadLock.java, RedissonWriteLock.java: kind "read-write-lock", a field
//     mode = read|write, readers as `<uuid>:<threadId>`, the writer as
//     `<uuid>:<threadId>:write`, a string {name}:<uuid>:<threadId>:rwlock_timeout:<n> per
//     read acquisition; waiters listen on redisson_rwlock:{name}, and message 1
//     (READ_UNLOCK_MESSAGE) wakes all of them.
//   - RedissonFencedLock.java: kind "fenced-lock", the RLock hash plus the counter
//     redisson_lock_token:{name} (INCR at each acquisition; never deleted).
//   - RedissonObject.java prefixName/suffixName: braces are added around the name only
//     when it has none.
//
// A fair lock without waiters has no queue and looks like a plain lock; the release
// covers both. The watchdog renews with an owner-checked PEXPIRE (renewal/LockTask.java)
// and never re-creates a deleted hash. A hash with a `<uuid>:<threadId>` field but a
// layout none of these writes is foreign, with the reason.
func decodeRedisson(in input) (Lock, bool) {
	holders, other, mode := 0, "", ""
	for f, v := range in.Fields {
		switch {
		case f == "mode":
			mode = v
		case redissonHolder(f) != "":
			holders++
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 1 {
				return redissonForeign(fmt.Sprintf("holder field %s has count %q, not a positive integer", f, v)), true
			}
		default:
			if other == "" || f < other {
				other = f
			}
		}
	}
	if holders == 0 {
		return Lock{}, false // not Redisson-looking: another decoder may know it
	}
	switch {
	case in.Truncated:
		return redissonForeign("the hash has more fields than were read; a Redisson lock has a few"), true
	case other != "":
		return redissonForeign(fmt.Sprintf("unexpected field %q", other)), true
	case mode != "" && mode != "read" && mode != "write":
		return redissonForeign(fmt.Sprintf("mode %q is neither read nor write", mode)), true
	case mode != "":
		return redissonRWLock(in, mode)
	case holders > 1:
		return redissonForeign(fmt.Sprintf("%d holder fields without a mode field; an RLock has one holder", holders)), true
	}
	return redissonLock(in), true
}

// redissonHolder returns the <uuid>:<threadId> of a holder field (a reader's field, or
// a writer's without its ":write"), or "".
func redissonHolder(f string) string {
	f = strings.TrimSuffix(f, ":write")
	if len(f) < 38 || f[36] != ':' || !isUUID(f[:36]) || !isDigits(f[37:]) {
		return ""
	}
	return f
}

func redissonForeign(why string) Lock {
	why = "Redisson-looking hash (field <uuid>:<threadId>) with an unknown layout: " + why
	return Lock{Library: Unknown, Evidence: why, Foreign: why}
}

// redissonLock decodes an RLock, fair lock or fenced lock: one holder field.
func redissonLock(in input) Lock {
	var field, count string
	for f, v := range in.Fields {
		field, count = f, v
	}
	n, _ := strconv.Atoi(count)
	l := Lock{
		Library:  Redisson,
		Kind:     "lock",
		Evidence: "hash with one field <uuid>:<threadId> = reentrancy count, as Redisson's RLock writes it",
		Holder:   field,
		Owner:    field,
		Count:    n,
		Renewal:  "watchdog: owner-checked PEXPIRE every lockWatchdogTimeout/3 (30s/3 by default); never re-creates",
	}
	l.Fields = []Field{{"holder", field + " (client uuid:thread id)"}, {"reentrancy", count}}
	queue := in.rel(redissonPrefixName("redisson_lock_queue", in.Key))
	timeouts := in.rel(redissonPrefixName("redisson_lock_timeout", in.Key))
	token := in.rel(redissonPrefixName("redisson_lock_token", in.Key))
	switch {
	case queue.Present() || timeouts.Present():
		l.Kind = "fair-lock"
		l.Evidence = "hash with one field <uuid>:<threadId> plus the queue " + queue.Key + ", as Redisson's fair lock writes them"
		l.Waiters = queue.Items
		deadline := map[string]float64{}
		for i, m := range timeouts.Items {
			if i < len(timeouts.Scores) {
				deadline[m] = timeouts.Scores[i]
			}
		}
		for i, w := range queue.Items {
			v := w
			if d, ok := deadline[w]; ok && d < math.MaxInt64 {
				v += " (gives up at " + time.UnixMilli(int64(d)).UTC().Format(time.RFC3339Nano) + ")"
			}
			l.Fields = append(l.Fields, Field{fmt.Sprintf("waiter %d", i+1), v})
		}
		if len(queue.Items) == 0 {
			l.Fields = append(l.Fields, Field{"waiters", "none"})
		}
	case token.Present():
		l.Kind = "fenced-lock"
		l.Evidence = "hash with one field <uuid>:<threadId> plus the token counter " + token.Key + ", as Redisson's fenced lock writes them"
		if t, err := strconv.ParseInt(token.Value, 10, 64); err == nil && t > 0 {
			l.Token = t
			l.Fields = append(l.Fields, Field{"token", token.Value})
		}
	}
	for _, c := range Companions(in.Key, TypeHash) {
		if in.rel(c.Key).Present() {
			l.Companions = append(l.Companions, c)
		}
	}
	l.Release = redissonRelease(in.Key, field, redissonPrefixName("redisson_lock__channel", in.Key), "0")
	return l
}

// redissonRWLock decodes a read/write lock: mode plus reader and writer fields.
func redissonRWLock(in input, mode string) (Lock, bool) {
	var readers, writers []string
	for f := range in.Fields {
		switch {
		case f == "mode":
		case strings.HasSuffix(f, ":write"):
			writers = append(writers, f)
		default:
			readers = append(readers, f)
		}
	}
	sort.Strings(readers)
	if mode == "write" && len(writers) != 1 {
		return redissonForeign(fmt.Sprintf("mode write with %d writer fields; a write lock has one", len(writers))), true
	}
	if mode == "read" && (len(writers) > 0 || len(readers) == 0) {
		return redissonForeign(fmt.Sprintf("mode read with %d writer and %d reader fields", len(writers), len(readers))), true
	}
	l := Lock{
		Library:  Redisson,
		Kind:     "read-write-lock",
		Evidence: "hash with mode=" + mode + " and <uuid>:<threadId> holder fields, as Redisson's read/write lock writes it",
		Renewal:  "watchdog: owner-checked PEXPIRE of the hash and the holders' rwlock_timeout keys; never re-creates",
	}
	l.Fields = []Field{{"mode", mode}}
	var check string
	if mode == "write" {
		w := writers[0]
		check = w
		l.Holder = w
		l.Owner = strings.TrimSuffix(w, ":write") + " (write)"
		l.Count, _ = strconv.Atoi(in.Fields[w])
		l.Fields = append(l.Fields, Field{"writer", strings.TrimSuffix(w, ":write")}, Field{"write reentrancy", in.Fields[w]})
	} else {
		check = readers[0]
		l.Holder = strings.Join(readers, ",")
		l.Owner = readers[0] + " (read)"
		if len(readers) > 1 {
			l.Owner = fmt.Sprintf("%s (read, +%d)", readers[0], len(readers)-1)
		}
		l.Count, _ = strconv.Atoi(in.Fields[readers[0]])
	}
	for _, r := range readers {
		l.Fields = append(l.Fields, Field{"reader", r + " x" + in.Fields[r]})
		n, _ := strconv.Atoi(in.Fields[r])
		for i := 1; i <= n && i <= 16; i++ {
			key := redissonSuffixName(in.Key, r+":rwlock_timeout:"+strconv.Itoa(i))
			l.Companions = append(l.Companions, Companion{Key: key, Role: RoleRWLockTimeout, Type: TypeString})
		}
	}
	l.Release = redissonRelease(in.Key, check, redissonPrefixName("redisson_rwlock", in.Key), "1")
	return l, true
}

// redissonRelease deletes the hash and publishes the unlock message on channel and, for
// a fair lock, on the own channel of every queued waiter (the first 64): Redisson's
// unlock wakes only the first one, after pruning waiters whose deadline passed by the
// client's clock; waking them all needs no clock, and a waiter that is not first just
// finds the lock still queued for another and waits again, while the first live one
// takes it (its own acquire prunes the dead ones ahead of it). Checked deletes only
// while field is still in the hash.
func redissonRelease(key, field, channel, msg string) Release {
	keys := []string{key, channel, redissonPrefixName("redisson_lock_queue", key)}
	what := "read/write lock waiters"
	if msg == "0" {
		what = "waiters (a fair lock's queued waiters on their own channels)"
	}
	return Release{
		Protocol: ProtoRedissonUnlock,
		Summary:  fmt.Sprintf("delete the hash and publish %s on %s (PUBLISH and SPUBLISH) to wake its %s", msg, channel, what),
		Checked: Script{Lua: luaRedissonChecked, Keys: keys, Args: []string{field, msg},
			Command: fmt.Sprintf("EVAL redisson-unlock: HEXISTS %q %q; if so: DEL %q, PUBLISH and SPUBLISH %s on %q and on %q:<waiter> for each waiter in LRANGE %q 0 63", key, field, key, msg, channel, channel, keys[2])},
		Any: Script{Lua: luaRedissonAny, Keys: keys, Args: []string{msg},
			Command: fmt.Sprintf("EVAL: DEL %q; if it was there: PUBLISH and SPUBLISH %s on %q and on %q:<waiter> for each waiter in LRANGE %q 0 63", key, msg, channel, channel, keys[2])},
	}
}

// The Redisson release scripts. KEYS: the hash, the unlock channel, the fair-lock
// queue. Checked: ARGV[1] the observed holder field, ARGV[2] the message; Any: ARGV[1]
// the message. Each message goes out twice: PUBLISH for waiters that SUBSCRIBE, and
// SPUBLISH for those that SSUBSCRIBE (Redisson on a Redis 7+ Cluster, by default); a
// waiter woken twice just tries again. The channels share the hash's hash tag, so
// SPUBLISH stays on the hash's slot; a server without SPUBLISH (before 7.0) only makes
// the pcall fail.
const (
	luaRedissonWake = `
local function wake(ch)
  redis.call('PUBLISH', ch, msg)
  redis.pcall('SPUBLISH', ch, msg)
end
wake(KEYS[2])
for _, w in ipairs(redis.call('LRANGE', KEYS[3], 0, 63)) do
  wake(KEYS[2] .. ':' .. w)
end
return 1`
	luaRedissonChecked = `if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
  return 0
end
redis.call('DEL', KEYS[1])
local msg = ARGV[2]` + luaRedissonWake
	luaRedissonAny = `if redis.call('DEL', KEYS[1]) == 0 then return 0 end
local msg = ARGV[1]` + luaRedissonWake
)
