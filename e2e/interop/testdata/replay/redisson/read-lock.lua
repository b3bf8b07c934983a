-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonReadLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonReadLock.tryLockInnerAsync (lines 56-79)
-- KEYS: [1] lock name, [2] {name}:<uuid>:<tid>:rwlock_timeout (getReadWriteTimeoutNamePrefix)
-- ARGV: [1] lease ms, [2] <uuid>:<tid>, [3] <uuid>:<tid>:write
-- The script below is the library's text, unchanged (its Java string literals, one per line).
local mode = redis.call('hget', KEYS[1], 'mode'); 
if (mode == false) then 
redis.call('hset', KEYS[1], 'mode', 'read'); 
redis.call('hset', KEYS[1], ARGV[2], 1); 
redis.call('set', KEYS[2] .. ':1', 1); 
redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); 
redis.call('pexpire', KEYS[1], ARGV[1]); 
return nil; 
end; 
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then 
local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); 
local key = KEYS[2] .. ':' .. ind;
redis.call('set', key, 1); 
redis.call('pexpire', key, ARGV[1]); 
local remainTime = redis.call('pttl', KEYS[1]); 
redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); 
return nil; 
end;
return redis.call('pttl', KEYS[1]);
