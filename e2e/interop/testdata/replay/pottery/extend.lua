-- Replayed by value from brainix/pottery
--   file:   pottery/redlock.py
--   commit: e2f40424c9dfc3f8de6efcfc4ff4e6d22155749c
--   what:   Redlock.__register_extend_script (Redlock._extend_script)
--   the Python literal's indentation is removed
-- KEYS: [1] redlock:<key>
-- ARGV: [1] uuid4, [2] auto_release_time ms
-- The script below is the library's text, unchanged.
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
else
    return 0
end
