-- Replayed by value from redisson/redisson
--   file:   redisson/src/main/java/org/redisson/RedissonLock.java
--   commit: 66863978b4a92093b97c1f8c96f182a77e81d50e
--   what:   RedissonLock.tryLockInnerAsync (lines 214-223)
--   returns nil when acquired (or re-entered), else the holder's PTTL
-- KEYS: [1] lock name
-- ARGV: [1] lease time ms, [2] lock name of the holder: <client uuid>:<thread id>
-- The script below is the library's text, unchanged (its Java string literals, one per line).
if ((redis.call('exists', KEYS[1]) == 0) 
or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then 
redis.call('hincrby', KEYS[1], ARGV[2], 1); 
redis.call('pexpire', KEYS[1], ARGV[1]); 
return nil; 
end; 
return redis.call('pttl', KEYS[1]);
