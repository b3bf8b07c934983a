package locks

import "strings"

// decodeLaravel recognises Laravel's cache lock on Redis. RedisStore::lock writes the
// store's prefix plus the lock name, and setPrefix adds ":" to a non-empty prefix; the
// cache prefix defaults to `<app>_cache` (`<app>_cache_` since Laravel 11), <app> being
// Str::slug(APP_NAME, "_"), and the Redis connection may put its own `<app>_database_`
// in front. The value is Str::random() (16 ASCII letters and digits). Verified against
// laravel/framework src/Illuminate/Cache/RedisStore.php (lock, setPrefix) at commit
// 0038ef28eb07db1078688e1e384980cc60f6047e, Cache/RedisLock.php (acquire, release),
// Cache/Lock.php (owner) and Cache/LuaScripts.php (releaseLock) at commit
// bd71b45fbb7e672957bf6ff61baddefe15fbca6a, and laravel/laravel config/cache.php and
// config/database.php (the default prefixes).
//
// A 16-character alphanumeric value alone is far too common to name Laravel: go-zero's
// RedisLock writes the same shape at any key. So the key must have Laravel's layout: its
// part before the first colon is a slug ending in "_cache" or "_cache_". Elsewhere the
// value is a guess between the two. No TTL when the lock was made with 0 seconds;
// refresh is owner-checked; release is compare-and-delete.
//
// go-zero (zeromicro/go-zero core/stores/redis/redislock.go, randomLen and randomStr,
// at commit 113a8107d36c546249ba776880d6fc661d21f9c2, and core/stringx/random.go Randn)
// SETs the caller's key NX PX holding 16 random letters (digits too in later
// versions); Acquire re-SETs it owner-checked, release is compare-and-delete.
func decodeLaravel(in input) (Lock, bool) {
	if len(in.Value) != 16 || !isAlnum(in.Value) {
		return Lock{}, false
	}
	if !laravelKey(in.Key) {
		l := guess(in, "16-char alphanumeric value at a key outside Laravel's cache layout: go-zero's RedisLock or a Laravel store with its own prefix; value shape only", GoZero, Laravel)
		l.Renewal = "go-zero: Acquire again re-SETs it owner-checked; Laravel: refresh() is owner-checked EXPIRE"
		return l, true
	}
	l := stringLock(in, Laravel, "16-char alphanumeric value (Str::random) under Laravel's cache prefix <app>_cache[_]:<name>; key layout and value shape")
	l.Renewal = "none automatic; refresh() is owner-checked EXPIRE (no TTL when made with 0 seconds)"
	return l, true
}

// laravelKey reports whether key has the layout of a Laravel cache key:
// [<app>_database_]<app>_cache[_]:<name>, <app> a slug of lowercase letters, digits and
// underscores.
func laravelKey(key string) bool {
	prefix, name, ok := strings.Cut(key, ":")
	if !ok || name == "" || !(strings.HasSuffix(prefix, "_cache") || strings.HasSuffix(prefix, "_cache_")) {
		return false
	}
	app := strings.TrimSuffix(strings.TrimSuffix(prefix, "_"), "_cache")
	if app == "" {
		return false
	}
	for i := 0; i < len(app); i++ {
		if c := app[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
