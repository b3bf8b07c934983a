package locks

// decodeUUID4 sorts out the libraries whose value is a lowercase UUIDv4, which only
// key naming tells apart:
//   - `mutex:<name>`: redis-semaphore's RedisMutex and RedlockMutex (key shape and value
//     shape; see redissemaphore.go);
//   - `redlock:<name>`: RedLock.net or pottery (both use that prefix): a guess with both;
//   - another key with a colon: aioredlock (bare resource name) or spring-integration
//     (`<registryKey>:<path>`): a guess with both;
//   - a key without a colon: spring-integration's keys always have one, so aioredlock,
//     by value shape alone: a guess.
//
// A guess is released by compare-and-delete of the exact value, never by one
// candidate's protocol (spring-integration's unlock also publishes on its registry
// channel, which a guess cannot name). Where RedLock.net or aioredlock may hold it,
// Recreates warns that the holder puts a deleted key back.
func decodeUUID4(in *input) (Lock, bool) {
	if !isUUID(in.Value) || uuidVersion(in.Value) != 4 {
		return Lock{}, false
	}
	var l Lock
	switch {
	case hasPrefix(in.Key, "mutex:"):
		l = stringLock(in, RedisSemaphore, "UUIDv4 value under mutex:<name>, as redis-semaphore's RedisMutex and RedlockMutex write them")
		l.Renewal = redisSemaphoreRenewal
	case hasPrefix(in.Key, "redlock:"):
		l = guess(in, "UUIDv4 value under redlock:<name>: RedLock.net or pottery (both write this; value shape and key prefix only)", RedlockNet, Pottery)
		l.Renewal = "RedLock.net: " + redlockNetRenewal + "; pottery: " + potteryRenewal
		l.Recreates = "if the holder is RedLock.net: " + redlockNetRecreates
	case hasInnerColon(in.Key):
		l = guess(in, "UUIDv4 value under a <prefix>:<name> key: aioredlock or spring-integration (both write this; value shape only)", Aioredlock, SpringIntegration)
		l.Renewal = "aioredlock: " + aioredlockRenewal + "; spring-integration: " + springRenewal
		l.Recreates = "if the holder is aioredlock: " + aioredlockRecreates
	default:
		l = guess(in, "UUIDv4 value at a bare key (no registry prefix, so not spring-integration): aioredlock's shape; value shape only", Aioredlock)
		l.Renewal = aioredlockRenewal
		l.Recreates = "if the holder is aioredlock: " + aioredlockRecreates
	}
	return l, true
}
