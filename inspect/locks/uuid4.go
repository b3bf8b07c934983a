package locks

// decodeUUID4 sorts out the libraries whose value is a lowercase UUIDv4. A UUIDv4 is
// the value half the world writes (aioredlock, Spring Integration's RedisLockRegistry,
// asynq's unique-task locks at asynq:{<queue>}:unique:<type>:<md5>, and any
// application's own uuid4()), so the value alone names no library; only key naming
// does:
//   - `mutex:<name>`: redis-semaphore's RedisMutex and RedlockMutex (key shape and value
//     shape; see redissemaphore.go);
//   - `redlock:<name>`: RedLock.net or pottery (both use that prefix): a guess with both;
//   - any other key: Unknown, with the shape as its evidence and no candidates.
//
// An unknown or a guess is released by compare-and-delete of the exact value, never by
// one candidate's protocol (spring-integration's unlock also publishes on its registry
// channel, which a guess cannot name). Where RedLock.net or aioredlock may hold it,
// Recreates warns that the holder puts a deleted key back.
func decodeUUID4(in input) (Lock, bool) {
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
	default:
		l = stringLock(in, Unknown, EvidenceUUID4)
		l.Renewal = "unknown (aioredlock: " + aioredlockRenewal + "; spring-integration: " + springRenewal + ")"
		l.Recreates = "if the holder is aioredlock: " + aioredlockRecreates
	}
	return l, true
}

// EvidenceUUID4 is the evidence of a UUIDv4 value at a key that no library's naming
// explains: the shape alone, which names no library.
const EvidenceUUID4 = "UUIDv4 value: a shape many libraries write (aioredlock, spring-integration, asynq's unique-task locks, any uuid4()), so it names none"
