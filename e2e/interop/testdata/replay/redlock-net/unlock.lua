-- Replayed by value from samcook/RedLock.net
--   file:   RedLockNet.SERedis/Lua/Unlock.lua
--   commit: dcfe373b3e288caac4f45b78c88b5943f8b47e42
--   what:   RedLock.Release via UnlockScript
--   the file's leading byte-order mark is dropped
-- KEYS: [1] redlock:<resource> (RedisKeyFormat default "redlock:{0}")
-- ARGV: [1] LockId (Guid.NewGuid().ToString())
-- The script below is the library's text, unchanged.
if redis.call('get', KEYS[1]) == ARGV[1] then
	return redis.call('del', KEYS[1])
else
	return 0
end
