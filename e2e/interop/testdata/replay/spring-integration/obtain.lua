-- Replayed by value from spring-projects/spring-integration
--   file:   spring-integration-redis/src/main/java/org/springframework/integration/redis/util/RedisLockRegistry.java
--   commit: f369e899dd3007756e4da49273e201b85afa5cc7
--   what:   RedisLock.OBTAIN_LOCK_SCRIPT, run by obtainLock()
--   Java text block: incidental indentation removed as javac does
-- KEYS: [1] <registryKey>:<path>
-- ARGV: [1] the registry's clientId (UUID.randomUUID()), [2] expireAfter ms
-- The script below is the library's text, unchanged.
local lockClientId = redis.call('GET', KEYS[1])
if lockClientId == ARGV[1] then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return true
elseif not lockClientId then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return true
end
return false
