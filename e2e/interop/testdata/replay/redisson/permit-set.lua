-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonPermitExpirableSemaphore.java
--   commit: 017b8306b450d6970ef7a5244e89c1c14bbab571
--   what:   RedissonPermitExpirableSemaphore.trySetPermitsAsync
--   returns 1 when the count was set, 0 when the semaphore had one already
-- KEYS: [1] semaphore name, [2] channel redisson_sc:{name}
-- ARGV: [1] permits, [2] publish command (PUBLISH, or SPUBLISH with sharded pub/sub)
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local value = redis.call('get', KEYS[1]); 
if (value == false) then 
redis.call('set', KEYS[1], ARGV[1]); 
redis.call(ARGV[2], KEYS[2], ARGV[1]); 
return 1;
end;
return 0;
