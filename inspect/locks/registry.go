package locks

import (
	"cmp"
	"slices"
)

// Library is one lock library redlockctl recognises: its id (Lock.Library, dump's
// "library", the console's LIB column), what its users call it, and the Redis type its
// locks are.
type Library struct {
	ID   string
	Name string
	Type string // TypeString or TypeHash
}

// Libraries is the registry of recognised libraries, sorted by ID; Unknown is not one.
// The decoders (stringDecoders, hashDecoders) name only these, and the console sorts
// its LIB column by this list.
var Libraries = func() []Library {
	libs := []Library{
		{Redlockctl, "redlockctl (this project's library)", TypeString},
		{Redsync, "go-redsync/redsync", TypeString},
		{NodeRedlock, "node-redlock", TypeString},
		{RedisPy, "redis-py Lock", TypeString},
		{PythonRedisLock, "python-redis-lock", TypeString},
		{RedlockNet, "RedLock.net", TypeString},
		{Pottery, "pottery Redlock", TypeString},
		{Aioredlock, "aioredlock", TypeString},
		{BsmRedislock, "bsm/redislock", TypeString},
		{Redisson, "Redisson", TypeHash},
		{SpringIntegration, "Spring Integration RedisLockRegistry", TypeString},
		{ShedLock, "ShedLock", TypeString},
		{Laravel, "Laravel cache locks", TypeString},
		{SidekiqUniqueJobs, "sidekiq-unique-jobs", TypeHash},
	}
	slices.SortFunc(libs, func(a, b Library) int { return cmp.Compare(a.ID, b.ID) })
	return libs
}()

// LibraryRank orders library ids for display: "" (no lock) first, then the registry's
// libraries in ID order, then Unknown, then ids the registry does not hold.
func LibraryRank(id string) int {
	switch id {
	case "":
		return 0
	case Unknown:
		return 1 + len(Libraries)
	}
	if i, ok := slices.BinarySearchFunc(Libraries, id, func(l Library, id string) int { return cmp.Compare(l.ID, id) }); ok {
		return 1 + i
	}
	return 2 + len(Libraries)
}
