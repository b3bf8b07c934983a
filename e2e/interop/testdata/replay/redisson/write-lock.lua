-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonWriteLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonWriteLock.tryLockInnerAsync (lines 54-74)
--   returns nil when acquired, else the PTTL; a waiter then subscribes to redisson_rwlock:{name}
-- KEYS: [1] lock name
-- ARGV: [1] lease ms, [2] <uuid>:<tid>:write
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local mode = redis.call('hget', KEYS[1], 'mode'); 
if (mode == false) then 
redis.call('hset', KEYS[1], 'mode', 'write'); 
redis.call('hset', KEYS[1], ARGV[2], 1); 
redis.call('pexpire', KEYS[1], ARGV[1]); 
return nil; 
end; 
if (mode == 'write') then 
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then 
redis.call('hincrby', KEYS[1], ARGV[2], 1); 
local currentExpire = redis.call('pttl', KEYS[1]); 
redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); 
return nil; 
end; 
end;
return redis.call('pttl', KEYS[1]);
