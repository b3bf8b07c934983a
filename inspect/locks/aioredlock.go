package locks

// aioredlock (joanvila/aioredlock) writes the resource name itself as the key, holding
// str(uuid.uuid4()). Verified against aioredlock/redis.py (SET_LOCK_SCRIPT,
// UNSET_LOCK_SCRIPT) and aioredlock/algorithm.py (lock, _auto_extend) at commit
// 685d1b5b08113738083ac8a449cc56b5ce10cee2.
//
// Its watchdog extends through SET_LOCK_SCRIPT, which SETs the key when it is missing:
// while the holder lives, a deleted key comes back at the next extension. Release is
// compare-and-delete.
const (
	aioredlockRenewal   = "watchdog extension through a script that SETs the key again when it is missing"
	aioredlockRecreates = "aioredlock re-creates a deleted key at its next watchdog extension while the holder lives"
)
