package locks

// Bookkeeping is a key a library keeps beside its locks that is no lock itself: a
// fencing counter, its metadata, a registry of digests. It belongs to its library and
// is never judged as a lock (no state, no anomaly, nothing to release).
type Bookkeeping struct {
	Library string
	Role    string // what the library keeps there
}

// bookkeeping lists the known bookkeeping keys by exact name, with the Redis type the
// library writes there.
var bookkeeping = map[string]struct {
	typ string
	Bookkeeping
}{
	// simple-redis-mutex dist/index.js (REDIS_FENCING_TOKENS_COUNTER): INCR at every
	// acquisition, never expires.
	simpleMutexFencing: {TypeString, Bookkeeping{SimpleRedisMutex, "fencing counter (INCR at each acquisition; never expires)"}},
	// Symfony Lock RedisStore::getNowCode: SET symfony_check_support_time 1 PX 1 to learn
	// whether scripts may call TIME.
	"symfony_check_support_time": {TypeString, Bookkeeping{SymfonyLock, "probe of the server's TIME support (lives 1 ms)"}},
	// sidekiq-unique-jobs lib/sidekiq_unique_jobs/constants.rb (DIGESTS,
	// EXPIRING_DIGESTS, CHANGELOGS, LIVE_VERSION, DEAD_VERSION).
	"uniquejobs:digests":          {TypeZSet, Bookkeeping{SidekiqUniqueJobs, "registry of lock digests"}},
	"uniquejobs:expiring_digests": {TypeZSet, Bookkeeping{SidekiqUniqueJobs, "registry of expiring lock digests"}},
	"uniquejobs:changelog":        {TypeZSet, Bookkeeping{SidekiqUniqueJobs, "changelog of lock events"}},
	"uniquejobs:live":             {TypeString, Bookkeeping{SidekiqUniqueJobs, "version of the live key layout"}},
	"uniquejobs:dead":             {TypeString, Bookkeeping{SidekiqUniqueJobs, "version of the dead key layout"}},
}

// BookkeepingOf reports whether key, holding a typ (a Redis type name) with value (for
// a string), is a library's known bookkeeping key. The type must be the one the library
// writes, and a counter must hold an integer: anything else at that name is judged
// like any other key.
func BookkeepingOf(key, typ, value string) (Bookkeeping, bool) {
	if len(key) >= 64 || bookkeepingLens&(1<<len(key)) == 0 {
		return Bookkeeping{}, false // (no hash of the key: a dump asks this of every key)
	}
	b, ok := bookkeeping[key]
	if !ok || b.typ != typ {
		return Bookkeeping{}, false
	}
	if key == simpleMutexFencing && !isDigits(value) {
		return Bookkeeping{}, false
	}
	return b.Bookkeeping, true
}

// bookkeepingLens has bit n set where a bookkeeping key is n bytes long (each is
// shorter than 64).
var bookkeepingLens = func() uint64 {
	var m uint64
	for k := range bookkeeping {
		if len(k) >= 64 {
			panic("locks: bookkeeping key " + k + " is 64 bytes or longer")
		}
		m |= 1 << len(k)
	}
	return m
}()
