-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonFairLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonFairLock.tryLockInnerAsync, EVAL_LONG branch (lines 152-229): tryLock(wait, lease) and lock()
--   a thread that cannot take the lock is queued (RPUSH queue, ZADD timeout) and gets the TTL;
--   it then subscribes to redisson_lock__channel:{name}:<uuid>:<tid>
-- KEYS: [1] lock name, [2] redisson_lock_queue:{name}, [3] redisson_lock_timeout:{name}
-- ARGV: [1] lease ms, [2] <uuid>:<tid>, [3] wait ms (fairLockWaitTimeout, default 5000), [4] current time ms
-- The script below is the library's text, unchanged (its Java string literals, one per line).
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
if (redis.call('exists', KEYS[1]) == 0) 
and ((redis.call('exists', KEYS[2]) == 0) 
or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then 
redis.call('lpop', KEYS[2]);
redis.call('zrem', KEYS[3], ARGV[2]);
local keys = redis.call('zrange', KEYS[3], 0, -1);
for i = 1, #keys, 1 do 
redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);
end;
redis.call('hset', KEYS[1], ARGV[2], 1);
redis.call('pexpire', KEYS[1], ARGV[1]);
return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then 
redis.call('hincrby', KEYS[1], ARGV[2],1);
redis.call('pexpire', KEYS[1], ARGV[1]);
return nil;
end;
local timeout = redis.call('zscore', KEYS[3], ARGV[2]);
if timeout ~= false then 
local ttl = redis.call('pttl', KEYS[1]);
return math.max(0, ttl); 
end;
local lastThreadId = redis.call('lindex', KEYS[2], -1);
local ttl;
if lastThreadId ~= false and lastThreadId ~= ARGV[2] and redis.call('zscore', KEYS[3], lastThreadId) ~= false then 
ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);
else 
ttl = redis.call('pttl', KEYS[1]);
end;
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then 
redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;
