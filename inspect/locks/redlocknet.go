package locks

// RedLock.net (samcook/RedLock.net) writes `redlock:<resource>` (its default
// RedisKeyFormat "redlock:{0}") holding Guid.NewGuid().ToString(): a lowercase UUIDv4.
// Verified against RedLockNet.SERedis/RedLock.cs (LockId, GetRedisKey),
// Configuration/RedLockConnectionProvider.cs (DefaultRedisKeyFormat) and
// Lua/Extend.lua, Lua/Unlock.lua at commit dcfe373b3e288caac4f45b78c88b5943f8b47e42.
//
// Its automatic extension (Extend.lua) SETs the key again when it is missing: while the
// holder lives, a deleted key comes back at the next extension. Release is
// compare-and-delete. pottery writes the same key and value shape (see pottery.go), so
// decodeUUID4 reports the two together.
const (
	redlockNetRenewal   = "automatic extension that SETs the key again when it is missing"
	redlockNetRecreates = "RedLock.net re-creates a deleted key at its next automatic extension while the holder lives"
)
