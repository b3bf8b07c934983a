-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonPermitExpirableSemaphore.java
--   commit: 017b8306b450d6970ef7a5244e89c1c14bbab571
--   what:   RedissonPermitExpirableSemaphore.tryAcquireAsync(List<String> ids, long timeoutDate)
--   returns 'OK' when the permits were taken, else ':<nearest expiry>' or nil
-- KEYS: [1] semaphore name, [2] {name}:timeout, [3] channel redisson_sc:{name}
-- ARGV: [1] permits, [2] expiry ms (922337203685477 without a lease), [3] now ms,
--       [4] 922337203685477, [5] publish command, [6...] permit ids (16 bytes each,
--       ServiceManager.generateId's hex decoded)
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); 
if #expiredIds > 0 then 
redis.call('zrem', KEYS[2], unpack(expiredIds)); 
local value = redis.call('incrby', KEYS[1], #expiredIds); 
if tonumber(value) > 0 then 
redis.call(ARGV[5], KEYS[3], value); 
end;
end; 
local value = redis.call('get', KEYS[1]); 
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then 
redis.call('decrby', KEYS[1], ARGV[1]); 
for i = 6, #ARGV, 1 do 
redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); 
end; 
local ttl = redis.call('pttl', KEYS[1]); 
if ttl > 0 then 
redis.call('pexpire', KEYS[2], ttl); 
end; 
return 'OK'; 
end; 
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); 
if v[1] ~= nil and v[2] ~= ARGV[4] then 
return ':' .. tostring(v[2]); 
end 
return nil;
