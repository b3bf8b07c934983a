-- Replayed by value from ionelmc/python-redis-lock
--   file:   src/redis_lock/__init__.py
--   commit: e448f12f49aa4a07885fe8cd02eae19a7e75fa51
--   what:   RESET_SCRIPT, run by Lock.reset() ("forcibly deletes the lock")
-- KEYS: [1] lock:<name>, [2] lock-signal:<name>
-- ARGV: [1] the lock id (unused), [2] signal_expire ms (default 1000)
-- The script below is the library's text, unchanged.
    redis.call('del', KEYS[2])
    redis.call('lpush', KEYS[2], 1)
    redis.call('pexpire', KEYS[2], ARGV[2])
    return redis.call('del', KEYS[1])
