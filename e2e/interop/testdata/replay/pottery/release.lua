-- Replayed by value from brainix/pottery
--   file:   pottery/redlock.py
--   commit: e2f40424c9dfc3f8de6efcfc4ff4e6d22155749c
--   what:   Redlock.__register_release_script (Redlock._release_script)
--   the Python literal's indentation is removed
-- KEYS: [1] redlock:<key>
-- ARGV: [1] uuid4
-- The script below is the library's text, unchanged.
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
else
    return 0
end
