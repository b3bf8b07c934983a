-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonSemaphore.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonSemaphore.tryAcquireAsync0(int permits), which tryAcquire and acquire call
--   returns 1 when the permits were taken, else 0
-- KEYS: [1] semaphore name
-- ARGV: [1] permits
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local value = redis.call('get', KEYS[1]); 
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then 
local val = redis.call('decrby', KEYS[1], ARGV[1]); 
return 1; 
end; 
return 0;
