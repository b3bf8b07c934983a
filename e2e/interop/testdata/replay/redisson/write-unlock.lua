-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonWriteLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonWriteLock.unlockInnerAsync (lines 77-117)
-- KEYS: [1] lock name, [2] redisson_rwlock:{name}, [3] redisson_unlock_latch:{name}:<request id>
-- ARGV: [1] LockPubSub.READ_UNLOCK_MESSAGE (1), [2] lease ms, [3] <uuid>:<tid>:write, [4] PUBLISH, [5] latch timeout ms
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local val = redis.call('get', KEYS[3]); 
if val ~= false then 
return tonumber(val);
end; 
local mode = redis.call('hget', KEYS[1], 'mode'); 
if (mode == false) then 
redis.call(ARGV[4], KEYS[2], ARGV[1]); 
redis.call('set', KEYS[3], 1, 'px', ARGV[5]); 
return nil; 
end;
if (mode == 'write') then 
local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); 
if (lockExists == 0) then 
return nil;
else 
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); 
if (counter > 0) then 
redis.call('pexpire', KEYS[1], ARGV[2]); 
redis.call('set', KEYS[3], 0, 'px', ARGV[5]); 
return 0; 
else 
redis.call('hdel', KEYS[1], ARGV[3]); 
if (redis.call('hlen', KEYS[1]) == 1) then 
redis.call('del', KEYS[1]); 
redis.call(ARGV[4], KEYS[2], ARGV[1]); 
else 
redis.call('hset', KEYS[1], 'mode', 'read'); 
end; 
redis.call('set', KEYS[3], 1, 'px', ARGV[5]); 
return 1; 
end; 
end; 
end; 
return nil;
