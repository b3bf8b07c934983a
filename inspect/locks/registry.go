package locks

import (
	"cmp"
	"slices"
)

// Library is one lock library redlockctl recognises: its id (Lock.Library, dump's
// "library", the console's LIB column), what its users call it, the Redis type its
// locks are, and the evidence its decoder needs to name it.
type Library struct {
	ID   string
	Name string
	Type string // TypeString, TypeHash or TypeZSet
	// Evidence says what the decoder needs: key shape, value shape, data type, sibling
	// keys. "value shape only" means the library is never named, only guessed (a
	// candidate, shown with "?").
	Evidence string
	// Scope is ScopeRedlock (the lock is meant to reach a quorum of N masters),
	// ScopeSingle (one server) or ScopePerKey (the library writes the same for both, and
	// PerKeyScope decides from what is there).
	Scope string
}

// Libraries is the registry of recognised libraries, sorted by ID; Unknown is not one.
// The decoders name only these, and the console sorts its LIB column by this list.
var Libraries = func() []Library {
	libs := []Library{
		{Redlockctl, "redlockctl (this project's library)", TypeString,
			"value <owner>#<32 hex>[#<token>]", ScopeRedlock},
		{Redsync, "go-redsync/redsync", TypeString,
			"value shape only (base64 of 16 bytes, 24 chars ending ==): guessed", ScopeRedlock},
		{Warlock, "node-redis-warlock", TypeString,
			"key <name>:lock and value base64 of a uuid1 stamped in the last 30 days; an older stamp: guessed with redsync", ScopeSingle},
		{NodeRedlock, "node-redlock", TypeString,
			"value shape only (32 lowercase hex): guessed", ScopeRedlock},
		{RedisPy, "redis-py Lock", TypeString,
			"value shape only (uuid1 hex stamped in the last 30 days): guessed", ScopeSingle},
		{PythonRedisLock, "python-redis-lock", TypeString,
			"key lock:<name> and value base64 of 18 bytes", ScopeSingle},
		{RedlockNet, "RedLock.net", TypeString,
			"key redlock:<name> and a UUIDv4 value, which pottery writes too: guessed with pottery", ScopeRedlock},
		{Pottery, "pottery Redlock", TypeString,
			"key redlock:<name> and a UUIDv4 value, which RedLock.net writes too: guessed with RedLock.net", ScopeRedlock},
		{Aioredlock, "aioredlock", TypeString,
			"never named: its value, a UUIDv4 at any key, is a shape many libraries write (asynq's unique-task locks too)", ScopeRedlock},
		{BsmRedislock, "bsm/redislock", TypeString,
			"value shape only (22-char base64url token, maybe metadata after it): guessed", ScopeSingle},
		{Redisson, "Redisson", TypeHash,
			"a hash whose fields are <uuid>:<threadId> holders with counts (plus mode, for read-write locks), with its queue, timeout and token keys beside it; RPermitExpirableSemaphore: sorted set {<name>}:timeout of 16-byte permit ids scored by expiry ms, its available permits (the integer at its name) joining its row (a plain RSemaphore's integer alone is never named)", ScopePerKey},
		{SpringIntegration, "Spring Integration RedisLockRegistry", TypeString,
			"never named: a UUIDv4 value at <registryKey>:<path> is a shape many libraries write (asynq's unique-task locks too)", ScopeSingle},
		{ShedLock, "ShedLock", TypeString,
			"value ADDED:<instant>@<host>[:<uuid>] (key job-lock:<env>:<name> by default)", ScopeSingle},
		{Laravel, "Laravel cache locks", TypeString,
			"key [<app>_database_]<app>_cache[_]:<name> and a 16-char alphanumeric value; elsewhere guessed with go-zero", ScopeSingle},
		{GoZero, "go-zero RedisLock", TypeString,
			"value shape only (16 letters and digits at any key): guessed with Laravel", ScopeSingle},
		{SidekiqUniqueJobs, "sidekiq-unique-jobs", TypeHash,
			"hash uniquejobs:<digest>:LOCKED whose fields are 24-hex job ids; its digests keys are bookkeeping", ScopeSingle},
		{RedisSemaphore, "redis-semaphore (npm)", TypeString,
			"mutexes: key mutex:<name> and a UUIDv4 value; semaphores: sorted set semaphore:<name> whose members are UUIDv4 identifiers scored by acquisition time", ScopePerKey},
		{SimpleRedisMutex, "simple-redis-mutex (npm)", TypeString,
			"key @simple-redis-mutex:lock-<name> holding Math.random(); its fencing counter is bookkeeping", ScopeSingle},
		{SymfonyLock, "Symfony Lock RedisStore", TypeZSet,
			"sorted set whose members are base64 tokens of 32 bytes (plus __write__ for an exclusive lock) scored by expiry in epoch ms", ScopePerKey},
		{Rueidislock, "rueidis rueidislock", TypeString,
			"key rueidislock:<i>:<name> holding 24 bytes; a lock is a majority of its keys on one server", ScopeSingle},
		{SymfonySemaphore, "Symfony Semaphore RedisStore", TypeZSet,
			"sorted set {<name>}:time of base64 tokens of 32 bytes scored by expiry in epoch seconds, with its sibling {<name>}:weight", ScopeSingle},
	}
	slices.SortFunc(libs, func(a, b Library) int { return cmp.Compare(a.ID, b.ID) })
	return libs
}()

// LibraryRank orders library ids for display: "" (no lock) first, then the registry's
// libraries in ID order (a guess by its first candidate), then Unknown, then ids the
// registry does not hold.
func LibraryRank(id string) int {
	switch id {
	case "":
		return 0
	case Unknown:
		return 1 + len(Libraries)
	}
	if names := LabelNames(id); len(names) > 1 || len(names) == 1 && names[0] != id {
		id = names[0]
	}
	if i, ok := slices.BinarySearchFunc(Libraries, id, func(l Library, id string) int { return cmp.Compare(l.ID, id) }); ok {
		return 1 + i
	}
	return 2 + len(Libraries)
}
