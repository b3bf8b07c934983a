-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonSemaphore.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonSemaphore.releaseAsync(int permits), which release calls
--   returns nothing (EVAL_VOID)
-- KEYS: [1] semaphore name, [2] channel redisson_sc:{name}
-- ARGV: [1] permits, [2] publish command (PUBLISH, or SPUBLISH with sharded pub/sub)
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local value = redis.call('incrby', KEYS[1], ARGV[1]); 
redis.call(ARGV[2], KEYS[2], value); 
