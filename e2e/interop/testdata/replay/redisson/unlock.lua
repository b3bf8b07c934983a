-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonLock.unlockInnerAsync (lines 347-371)
-- KEYS: [1] lock name, [2] redisson_lock__channel:{name}, [3] redisson_unlock_latch:{name}:<request id>
-- ARGV: [1] LockPubSub.UNLOCK_MESSAGE (0), [2] lease ms, [3] <uuid>:<tid>, [4] PUBLISH (SPUBLISH when sharded), [5] latch timeout ms
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local val = redis.call('get', KEYS[3]); 
if val ~= false then 
return tonumber(val);
end; 
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then 
return nil;
end; 
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); 
if (counter > 0) then 
redis.call('pexpire', KEYS[1], ARGV[2]); 
redis.call('set', KEYS[3], 0, 'px', ARGV[5]); 
return 0; 
else 
redis.call('del', KEYS[1]); 
redis.call(ARGV[4], KEYS[2], ARGV[1]); 
redis.call('set', KEYS[3], 1, 'px', ARGV[5]); 
return 1; 
end; 
