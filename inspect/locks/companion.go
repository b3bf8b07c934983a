package locks

import "strings"

// Companion roles, as reported in Companion.Role.
const (
	RoleFenceCounter     = "fence counter"      // redlockctl <key>:fence
	RoleFairQueue        = "fair-lock queue"    // Redisson redisson_lock_queue:{name}
	RoleFairTimeouts     = "fair-lock timeouts" // Redisson redisson_lock_timeout:{name}
	RoleFenceToken       = "fence token"        // Redisson redisson_lock_token:{name}
	RoleUnlockLatch      = "unlock latch"       // Redisson redisson_unlock_latch:{name}:<id>
	RoleRWLockTimeout    = "rwlock timeout"     // Redisson {name}:<uuid>:<tid>:rwlock_timeout:<n>
	RoleSignalList       = "signal list"        // python-redis-lock lock-signal:<name>
	RoleJobState         = "job state"          // sidekiq-unique-jobs uniquejobs:<digest>:QUEUED ...
	RoleSemaphoreWeights = "semaphore weights"  // Symfony Semaphore {<name>}:weight
	RolePermitCount      = "permit count"       // Redisson <name> of an RPermitExpirableSemaphore
)

// Companion is a key that belongs to a lock's row rather than being a row of its own.
type Companion struct {
	Key  string
	Role string
	Type string // the Redis type the library writes there
}

// Companions returns the companion keys the poller should read along with a lock key of
// type typ (a Redis type name), because the decoder needs them: for a hash, Redisson's
// fair-lock queue and timeouts and its fence token. Other companions are only folded
// into their lock's row (see CompanionOf) and need not be read.
func Companions(key, typ string) []Companion {
	if typ != TypeHash {
		return nil
	}
	return []Companion{
		{Key: redissonPrefixName("redisson_lock_queue", key), Role: RoleFairQueue, Type: TypeList},
		{Key: redissonPrefixName("redisson_lock_timeout", key), Role: RoleFairTimeouts, Type: TypeZSet},
		{Key: redissonPrefixName("redisson_lock_token", key), Role: RoleFenceToken, Type: TypeString},
	}
}

// Related returns the companion keys Decode needs for e (read them and pass them to
// Decode as related): Companions for a hash with a Redisson holder field
// `<uuid>:<threadId>`; for the timeout set of a Redisson RPermitExpirableSemaphore,
// the string keys its permit count may be at (its name, most likely first); none for
// anything else. It lets a reader skip the companion reads for the keys that are no
// lock.
func Related(e Entry) []Companion {
	if e.Type == TypeZSet {
		return redissonPermitCompanions(e)
	}
	if e.Type != TypeHash {
		return nil
	}
	for f := range e.Fields {
		if redissonHolder(f) != "" {
			return Companions(e.Key, TypeHash)
		}
	}
	return nil
}

// CompanionOf reports whether key is a companion of a lock, and the keys that lock may
// have, most likely first: Redisson adds braces around a name unless it has one already,
// so `redisson_lock_queue:{a}` belongs to `a` or, less likely, to `{a}`. A caller folds
// the companion into the row of the first candidate that exists.
func CompanionOf(key string) (lockKeys []string, role string, ok bool) {
	switch {
	case hasPrefix(key, "redisson_lock_queue:"):
		return redissonNames(key[len("redisson_lock_queue:"):]), RoleFairQueue, true
	case hasPrefix(key, "redisson_lock_timeout:"):
		return redissonNames(key[len("redisson_lock_timeout:"):]), RoleFairTimeouts, true
	case hasPrefix(key, "redisson_lock_token:"):
		return redissonNames(key[len("redisson_lock_token:"):]), RoleFenceToken, true
	case hasPrefix(key, "redisson_unlock_latch:"):
		rest := key[len("redisson_unlock_latch:"):]
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 || !isHex(rest[i+1:]) {
			return nil, "", false
		}
		return redissonNames(rest[:i]), RoleUnlockLatch, true
	case hasPrefix(key, "lock-signal:"):
		return []string{"lock:" + key[len("lock-signal:"):]}, RoleSignalList, true
	case hasPrefix(key, "uniquejobs:"):
		for _, s := range []string{":QUEUED", ":PRIMED", ":INFO"} {
			if d, ok := strings.CutSuffix(key, s); ok && len(d) > len("uniquejobs:") {
				return []string{d + ":LOCKED"}, RoleJobState, true
			}
		}
	}
	if name, ok := strings.CutSuffix(key, "}:weight"); ok && strings.HasPrefix(name, "{") && len(name) > 1 {
		return []string{name + "}:time"}, RoleSemaphoreWeights, true
	}
	if name, ok := rwlockTimeoutOf(key); ok {
		return name, RoleRWLockTimeout, true
	}
	if k, ok := strings.CutSuffix(key, ":fence"); ok && k != "" {
		return []string{k}, RoleFenceCounter, true
	}
	return nil, "", false
}

// rwlockTimeoutOf parses Redisson's read-lock timeout keys:
// suffixName(name, "<uuid>:<tid>:rwlock_timeout") + ":<n>".
func rwlockTimeoutOf(key string) ([]string, bool) {
	// The digits hold no colon: the last one ends ":rwlock_timeout:" (found this way,
	// the test costs next to nothing for the keys of other locks, every poll).
	i := strings.LastIndexByte(key, ':')
	if i < 0 || !isDigits(key[i+1:]) {
		return nil, false
	}
	rest, ok := strings.CutSuffix(key[:i], ":rwlock_timeout")
	if !ok {
		return nil, false
	}
	// rest is <name part>:<uuid>:<tid>
	j := strings.LastIndexByte(rest, ':')
	if j < 0 || !isDigits(rest[j+1:]) {
		return nil, false
	}
	rest = rest[:j]
	if len(rest) < 37 || rest[len(rest)-37] != ':' || !isUUID(rest[len(rest)-36:]) {
		return nil, false
	}
	name := rest[:len(rest)-37]
	if name == "" {
		return nil, false
	}
	if len(name) > 2 && name[0] == '{' && name[len(name)-1] == '}' && !strings.ContainsAny(name[1:len(name)-1], "{}") {
		return []string{name[1 : len(name)-1], name}, true
	}
	return []string{name}, true
}

// redissonNames inverts Redisson's prefixName: the lock names that give rest.
func redissonNames(rest string) []string {
	if len(rest) > 2 && rest[0] == '{' && rest[len(rest)-1] == '}' && !strings.ContainsAny(rest[1:len(rest)-1], "{}") {
		return []string{rest[1 : len(rest)-1], rest}
	}
	return []string{rest}
}

// redissonPrefixName is Redisson's prefixName: prefix:{name}, no braces added when the
// name already has one.
func redissonPrefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// redissonSuffixName is Redisson's suffixName: {name}:suffix, or name:suffix when the
// name already has a brace.
func redissonSuffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// RoleType returns the Redis type the library writes for a companion role ("" when it
// writes several), so that a caller folds a key only when its type fits the role.
func RoleType(role string) string {
	switch role {
	case RoleFairQueue, RoleSignalList:
		return TypeList
	case RoleFairTimeouts, RoleSemaphoreWeights:
		return TypeZSet
	case RoleFenceCounter, RoleFenceToken, RoleUnlockLatch, RoleRWLockTimeout, RolePermitCount:
		return TypeString
	}
	return ""
}
