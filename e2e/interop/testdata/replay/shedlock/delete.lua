-- Replayed by value from lukas-krecan/ShedLock
--   file:   providers/redis/shedlock-support-redis/src/main/java/net/javacrumbs/shedlock/provider/redis/support/InternalRedisLockProvider.java
--   commit: 2495b1406d85323b8deadbe75d7a5dd3e8b8e844
--   what:   InternalRedisLockProvider.delLuaScript, run by deleteLock() with safeUpdate
--   Java text block: incidental indentation removed as javac does
-- KEYS: [1] job-lock:<env>:<name>
-- ARGV: [1] the lock value
-- The script below is the library's text, unchanged.
if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end
