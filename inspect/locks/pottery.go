package locks

// pottery (brainix/pottery) Redlock writes `redlock:<key>` (Primitive's key setter with
// _KEY_PREFIX "redlock") holding str(uuid.uuid4()). Verified against pottery/redlock.py
// (_acquire_masters, the extend and release scripts) and pottery/base.py
// (Primitive.key) at commit e2f40424c9dfc3f8de6efcfc4ff4e6d22155749c.
//
// It does not renew by itself: the key counts down from auto_release_time, and extend()
// is an owner-checked PEXPIRE that never re-creates. Release is compare-and-delete.
// RedLock.net writes the same shape (see redlocknet.go).
const potteryRenewal = "none automatic (counts down from auto_release_time); extend() is owner-checked PEXPIRE"
