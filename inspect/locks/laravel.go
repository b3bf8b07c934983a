package locks

import "strings"

// decodeLaravel recognises Laravel's cache lock on Redis: the cache prefix (since
// Laravel 11 `<app>-cache-`, before `<app>_cache:`; the connection may add its own
// `<app>_database_` prefix) plus the lock name, holding Str::random() (16 ASCII letters
// and digits). Verified against laravel/framework src/Illuminate/Cache/RedisLock.php
// (acquire, release), Cache/Lock.php (owner) and Cache/LuaScripts.php (releaseLock), and
// config/cache.php (prefix) at commit bd71b45fbb7e672957bf6ff61baddefe15fbca6a.
//
// A 16-character alphanumeric value alone is far too common to name Laravel, so the key
// must also carry a cache prefix. No TTL when the lock was made with 0 seconds; refresh
// is owner-checked; release is compare-and-delete.
func decodeLaravel(in *input) (Lock, bool) {
	if len(in.Value) != 16 || !isAlnum(in.Value) || !strings.Contains(strings.ToLower(in.Key), "cache") {
		return Lock{}, false
	}
	l := stringLock(in, Laravel, "16-char alphanumeric value (Str::random) under a cache-prefixed key, as Laravel's cache lock writes them; key naming and value shape only")
	l.Renewal = "none automatic; refresh() is owner-checked EXPIRE (no TTL when made with 0 seconds)"
	return l, true
}
