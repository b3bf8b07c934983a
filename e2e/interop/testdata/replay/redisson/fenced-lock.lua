-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonFencedLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonFencedLock.tryLockInnerAsync(leaseTime, unit, threadId) (lines 106-118)
--   returns {-1, token} when acquired, else {pttl, -1}
-- KEYS: [1] lock name, [2] redisson_lock_token:{name}
-- ARGV: [1] lease ms, [2] <uuid>:<tid>
-- The script below is the library's text, unchanged (its Java string literals, one per line).
if (redis.call('exists', KEYS[1]) == 0 
or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then 
local token = redis.call('incr', KEYS[2]);
redis.call('hincrby', KEYS[1], ARGV[2], 1); 
redis.call('pexpire', KEYS[1], ARGV[1]); 
return {-1, token}; 
end; 
return {redis.call('pttl', KEYS[1]), -1};
