package locks

import "strings"

// spring-integration's RedisLockRegistry writes `<registryKey>:<path>` holding the
// registry's clientId, one UUID.randomUUID() per registry (so per process, not per
// lock). Verified against spring-integration-redis/.../redis/util/RedisLockRegistry.java
// (constructLockKey, OBTAIN_LOCK_SCRIPT, RENEW_SCRIPT, UNLINK_UNLOCK_SCRIPT,
// unLockChannelKey) at commit f369e899dd3007756e4da49273e201b85afa5cc7.
//
// Renewal (renewLock) is an owner-checked PEXPIRE. A PUB_SUB_LOCK registry's waiters
// listen on the pattern `<registryKey>-channel:*` and wake when its unlock publishes the
// lock key on `<registryKey>-channel:<lock key>`; a SPIN_LOCK registry polls. The
// registry key is not written anywhere, so the release publishes on the channel of every
// possible split of the key at a colon: only the real registry's waiters listen there.
const springRenewal = "renewLock: owner-checked PEXPIRE, called by the application"

// springChannels returns the unlock channels of every registry key that can have
// produced key (each prefix ending before a colon), at most maxSpringChannels.
func springChannels(key string) []string {
	var out []string
	for i := 0; i < len(key) && len(out) < maxSpringChannels; i++ {
		if key[i] == ':' && i > 0 && i < len(key)-1 {
			out = append(out, key[:i]+"-channel:"+key)
		}
	}
	return out
}

const maxSpringChannels = 8

// springRelease deletes the key where it holds value (or anything, for Any) and
// publishes the key on each candidate unlock channel, as UNLINK_UNLOCK_SCRIPT does.
func springRelease(key, value string) Release {
	ch := springChannels(key)
	return Release{
		Protocol: ProtoSpringUnlock,
		Summary: "delete the key where it holds the observed value and publish the key on " +
			strings.Join(ch, ", ") + " (wakes spring-integration PUB_SUB_LOCK waiters)",
		Checked: Script{Lua: luaSpringChecked, Keys: []string{key}, Args: append([]string{value}, ch...)},
		Any:     Script{Lua: luaSpringAny, Keys: []string{key}, Args: ch},
	}
}

// The spring release scripts: KEYS[1] the lock; the channels in ARGV (after the
// observed value, for the checked form).
const (
	luaSpringChecked = `local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then
  if v then return -1 end
  return 0
end
redis.call('DEL', KEYS[1])
for i = 2, #ARGV do redis.call('PUBLISH', ARGV[i], KEYS[1]) end
return 1`
	luaSpringAny = `local n = redis.call('DEL', KEYS[1])
for i = 1, #ARGV do redis.call('PUBLISH', ARGV[i], KEYS[1]) end
return n`
)
