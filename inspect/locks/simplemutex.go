package locks

import (
	"strconv"
	"strings"
)

// decodeSimpleRedisMutex recognises simple-redis-mutex (npm): key
// `@simple-redis-mutex:lock-<name>` holding String(Math.random()), a decimal fraction.
// Verified against simple-redis-mutex dist/index.js (getLockKey, tryLock,
// releaseScript) at version 3.0.0 (npm). Its release script deletes the key where it
// holds the value and publishes `{ "key": …, "value": … }` on
// `@simple-redis-mutex:locks-releases`; waiters also poll every pollingInterval, so a
// compare-and-delete wakes them at their next poll. Each acquisition INCRs the fencing
// counter `@simple-redis-mutex:fencing-tokens`, a bookkeeping key (see Bookkeeping).
// refreshTimeout is GET then PEXPIRE and never re-creates a deleted key.
func decodeSimpleRedisMutex(in input) (Lock, bool) {
	if !hasPrefix(in.Key, simpleMutexLockPrefix) {
		return Lock{}, false
	}
	if f, err := strconv.ParseFloat(in.Value, 64); err != nil || f < 0 || f >= 1 || strings.Trim(in.Value, "0123456789.e-") != "" {
		return Lock{}, false
	}
	l := stringLock(in, SimpleRedisMutex, "key @simple-redis-mutex:lock-<name> holding Math.random(), as simple-redis-mutex writes them")
	l.Renewal = "refreshTimeout: GET then PEXPIRE, called by the application; never re-creates"
	return l, true
}

const (
	simpleMutexLockPrefix = "@simple-redis-mutex:lock-"
	simpleMutexFencing    = "@simple-redis-mutex:fencing-tokens"
)
