-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonFairLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonFairLock.unlockInnerAsync (lines 235-285)
--   publishes on the first waiter's own channel: KEYS[4] .. ":" .. <first queued uuid:tid>
-- KEYS: [1] lock name, [2] queue, [3] timeout set, [4] redisson_lock__channel:{name}, [5] redisson_unlock_latch:{name}:<request id>
-- ARGV: [1] UNLOCK_MESSAGE (0), [2] lease ms, [3] <uuid>:<tid>, [4] current time ms, [5] PUBLISH, [6] latch timeout ms
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local val = redis.call('get', KEYS[5]); 
if val ~= false then 
return tonumber(val);
end; 
while true do 
local firstThreadId2 = redis.call('lindex', KEYS[2], 0);
if firstThreadId2 == false then 
break;
end; 
local timeout = redis.call('zscore', KEYS[3], firstThreadId2);
if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then 
redis.call('zrem', KEYS[3], firstThreadId2); 
redis.call('lpop', KEYS[2]); 
else 
break;
end; 
end;
if (redis.call('exists', KEYS[1]) == 0) then 
local nextThreadId = redis.call('lindex', KEYS[2], 0); 
if nextThreadId ~= false then 
redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); 
end; 
redis.call('set', KEYS[5], 1, 'px', ARGV[6]); 
return 1; 
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then 
return nil;
end; 
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); 
if (counter > 0) then 
redis.call('pexpire', KEYS[1], ARGV[2]); 
redis.call('set', KEYS[5], 0, 'px', ARGV[6]); 
return 0; 
end; 
redis.call('del', KEYS[1]); 
redis.call('set', KEYS[5], 1, 'px', ARGV[6]); 
local nextThreadId = redis.call('lindex', KEYS[2], 0); 
if nextThreadId ~= false then 
redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); 
end; 
return 1; 
