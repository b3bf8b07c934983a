-- Replayed by value from spring-projects/spring-integration
--   file:   spring-integration-redis/src/main/java/org/springframework/integration/redis/util/RedisLockRegistry.java
--   commit: f369e899dd3007756e4da49273e201b85afa5cc7
--   what:   RedisPubSubLock.UNLINK_UNLOCK_SCRIPT, run by removeLockKeyInnerUnlink()
--   Java text block: incidental indentation removed as javac does;
--   waiters PSUBSCRIBE <registryKey>-channel:* and take the message body as the lock key
-- KEYS: [1] <registryKey>:<path>
-- ARGV: [1] clientId, [2] unlock channel <registryKey>-channel:<registryKey>:<path>
-- The script below is the library's text, unchanged.
local lockClientId = redis.call('GET', KEYS[1])
if (lockClientId == ARGV[1] and redis.call('UNLINK', KEYS[1]) == 1) then
	redis.call('PUBLISH', ARGV[2], KEYS[1])
	return true
end
return false
