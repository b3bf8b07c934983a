// Package interop holds redlockctl's interoperability tests: real lock clients of other
// libraries (redsync and bsm/redislock in Go; node-redlock, redis-semaphore,
// node-redis-warlock and simple-redis-mutex on node; redis-py; Symfony Lock and
// Semaphore in PHP) take real locks on real redis-server processes, and the redlockctl
// binary, run as users run it, must name the library (or say it only guesses), judge
// the lock and release it so that those clients notice. Libraries
// that cannot be installed here (Redisson, python-redis-lock, RedLock.net, pottery,
// Spring Integration, ShedLock) are replayed from their own Lua scripts and commands,
// copied by value into testdata/replay with the repository, file and commit
// they came from.
//
// The package has tests only. It must never be imported, and its tests never talk to
// anything but the loopback servers they start.
package interop
