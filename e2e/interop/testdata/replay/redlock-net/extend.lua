-- Replayed by value from samcook/RedLock.net
--   file:   RedLockNet.SERedis/Lua/Extend.lua
--   commit: dcfe373b3e288caac4f45b78c88b5943f8b47e42
--   what:   RedLock.ExtendLockLifetime via ExtendIfMatchingValueScript; re-creates a missing key
--   the file's leading byte-order mark is dropped
-- KEYS: [1] redlock:<resource> (RedisKeyFormat default "redlock:{0}")
-- ARGV: [1] LockId (Guid.NewGuid().ToString()), [2] expiry ms
-- The script below is the library's text, unchanged.
local currentVal = redis.call('get', KEYS[1])
if (currentVal == false) then
	return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) and 1 or 0
elseif (currentVal == ARGV[1]) then
	return redis.call('pexpire', KEYS[1], ARGV[2])
else
	return -1
end
