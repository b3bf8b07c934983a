-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonSemaphore.java
--   commit: 011be4160aeb5e23510e6715c16531ccaea07db9
--   what:   RedissonSemaphore.trySetPermitsAsync
--   returns 1 when the count was set, 0 when the semaphore had one already
-- KEYS: [1] semaphore name, [2] channel redisson_sc:{name}
-- ARGV: [1] permits
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local value = redis.call('get', KEYS[1]); 
if (value == false) then 
redis.call('set', KEYS[1], ARGV[1]); 
redis.call('publish', KEYS[2], ARGV[1]); 
return 1;
end;
return 0;
