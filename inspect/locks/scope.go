package locks

import "strings"

// Lock scopes, as reported in the JSON field "scope" and the scope label of
// redlockctl_locks.
const (
	// ScopeRedlock is a lock meant to reach a quorum of the N masters: judged by the
	// quorum (held, partial, split).
	ScopeRedlock = "redlock"
	// ScopeSingle is a lock on one server: judged on its own master, never partial or
	// split; copies on several masters are independent locks.
	ScopeSingle = "single"
	// ScopePerKey is a registry entry's scope when the library writes the same thing
	// for both and the key decides (see PerKeyScope).
	ScopePerKey = "per-key"
)

// ScopeOf returns the scope a row of label (a Label: a library, or the candidates of a
// guess) declares: single when every library it names is single-instance, per-key
// when one it names decides per key and none is a Redlock library, redlock when one it
// names is a Redlock library, and "" when it names none (Unknown, or no lock): then
// the fleet's default applies.
func ScopeOf(label string) string {
	if label == "" || label == Unknown {
		return ""
	}
	scope := ""
	rest := strings.TrimSuffix(label, "?")
	for rest != "" { // the names of LabelNames, without allocating
		var id string
		id, rest, _ = strings.Cut(rest, "|")
		s := libraryScope(id)
		switch {
		case s == "" || s == ScopeRedlock:
			return ScopeRedlock
		case scope == "" || s == ScopePerKey:
			scope = s
		}
	}
	return scope
}

// PerKeyScope decides the scope of a per-key library's lock from what is there: the
// same holder on several masters is a multi-master lock (Redisson's RedissonRedLock or
// RedissonMultiLock, redis-semaphore's RedlockMutex or RedlockSemaphore, Symfony's
// CombinedStore), on one master a single-instance one (RLock, Mutex, Semaphore,
// RedisStore).
func PerKeyScope(holders int) string {
	if holders > 1 {
		return ScopeRedlock
	}
	return ScopeSingle
}

// libraryScope is the registry's scope of library id ("" for an id it does not hold).
func libraryScope(id string) string { return scopes[id] }

// scopes maps each registry library's id to its scope.
var scopes = func() map[string]string {
	m := make(map[string]string, len(Libraries))
	for _, l := range Libraries {
		m[l.ID] = l.Scope
	}
	return m
}()
