package locks

// redis-semaphore (npm, swarthy/redis-semaphore) version 5.8.0, verified against its
// lib/RedisMutex.js, RedlockMutex.js, RedisSemaphore.js (the `mutex:` and `semaphore:`
// key prefixes), Lock.js (getIdentifier: crypto.randomUUID()), mutex/acquire.js,
// mutex/release.js (delIfEqualLua), semaphore/acquire/lua.js, semaphore/refresh/lua.js
// and semaphore/release.js (ZREM):
//   - RedisMutex and RedlockMutex: `mutex:<name>` holding the identifier, a UUIDv4,
//     SET NX PX on one master or on a quorum; refresh is an owner-checked PEXPIRE;
//     release is compare-and-delete.
//   - RedisSemaphore and RedlockSemaphore: the sorted set `semaphore:<name>`, each holder
//     a member (the identifier) scored by its acquisition time (epoch ms); acquire drops
//     members older than lockTimeout and PEXPIREs the key to lockTimeout; release is
//     ZREM of the holder's member.
const redisSemaphoreRenewal = "refresh every lockTimeout*0.8: owner-checked (PEXPIRE, or ZADD of its own member); never re-creates"
