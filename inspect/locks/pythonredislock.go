package locks

import "fmt"

// decodePythonRedisLock recognises ionelmc/python-redis-lock: key `lock:<name>` holding
// base64 of 18 random bytes (24 characters, no padding), and the companion list
// `lock-signal:<name>` its waiters BLPOP on. Verified against ionelmc/python-redis-lock
// src/redis_lock/__init__.py (Lock.__init__, UNLOCK_SCRIPT, EXTEND_SCRIPT,
// RESET_SCRIPT) at commit e448f12f49aa4a07885fe8cd02eae19a7e75fa51 (4.0.1).
//
// No TTL unless expire is given; auto_renewal extends owner-checked and never
// re-creates. Release deletes the key and pushes one element onto the signal list (with
// a short expiry), exactly as its own unlock and reset scripts do; a bare DEL would leave
// waiters blocked until their BLPOP times out (forever without expire).
func decodePythonRedisLock(in input) (Lock, bool) {
	if !hasPrefix(in.Key, "lock:") || !isBase64(in.Value, b64Std, 18) {
		return Lock{}, false
	}
	l := stringLock(in, PythonRedisLock, "key lock:<name> holding base64 of 18 bytes (24 chars), as python-redis-lock writes them")
	signal := "lock-signal:" + in.Key[len("lock:"):]
	l.Companions = []Companion{{Key: signal, Role: RoleSignalList, Type: TypeList}}
	l.Renewal = "auto_renewal: owner-checked EXPIRE every 2/3 of expire; never re-creates (no TTL without expire)"
	if in.release {
		l.Release = Release{
			Protocol: ProtoSignalList,
			Summary:  "delete the key and LPUSH its signal list " + signal + " so that blocked waiters wake (as its reset does)",
			Checked: Script{Lua: luaSignalChecked, Keys: []string{in.Key, signal}, Args: []string{in.Value, signalExpireMs},
				Command: fmt.Sprintf("EVAL: GET %q; if it holds value=%q: DEL %q, LPUSH %q 1, PEXPIRE %q %s, DEL %q", in.Key, in.Value, signal, signal, signal, signalExpireMs, in.Key)},
			Any: Script{Lua: luaSignalAny, Keys: []string{in.Key, signal}, Args: []string{signalExpireMs},
				Command: fmt.Sprintf("EVAL: DEL %q, LPUSH %q 1, PEXPIRE %q %s, DEL %q", signal, signal, signal, signalExpireMs, in.Key)},
		}
	}
	return l, true
}

// signalExpireMs is python-redis-lock's default signal_expire: how long the pushed
// signal element lives.
const signalExpireMs = "1000"

// The python-redis-lock release scripts: KEYS[1] lock, KEYS[2] signal list.
const (
	luaSignalChecked = `local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then
  if v then return -1 end
  return 0
end
redis.call('DEL', KEYS[2])
redis.call('LPUSH', KEYS[2], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[1])
return 1`
	luaSignalAny = `redis.call('DEL', KEYS[2])
redis.call('LPUSH', KEYS[2], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])`
)
