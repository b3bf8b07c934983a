package locks

// spring-integration's RedisLockRegistry writes `<registryKey>:<path>` holding the
// registry's clientId, one UUID.randomUUID() per registry (so per process, not per
// lock). Verified against spring-integration-redis/.../redis/util/RedisLockRegistry.java
// (constructLockKey, OBTAIN_LOCK_SCRIPT, RENEW_SCRIPT, UNLINK_UNLOCK_SCRIPT,
// unLockChannelKey) at commit f369e899dd3007756e4da49273e201b85afa5cc7.
//
// Renewal (renewLock) is an owner-checked PEXPIRE. A PUB_SUB_LOCK registry's waiters
// listen on the pattern `<registryKey>-channel:*` and wake when its unlock publishes the
// lock key on `<registryKey>-channel:<lock key>`; a SPIN_LOCK registry polls. Its key
// (any <prefix>:<name>) and value (a UUIDv4) have shapes many libraries write, so
// decodeUUID4 never names it: such a key is Unknown, released by compare-and-delete,
// and PUB_SUB_LOCK waiters then wake at their own timeout rather than at once.
const springRenewal = "renewLock: owner-checked PEXPIRE, called by the application"
