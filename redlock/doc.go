// Package redlock implements the Redlock distributed lock over N independent Redis
// masters (quorum N/2+1), with optional fencing tokens and a lock that tells its holder
// when it is lost.
//
// Acquire sends SET key value NX PX ttl to every master at once, returns as soon as a
// quorum agreed, and gives the lock a local deadline (t0 + ttl - drift on the monotonic
// clock, t0 taken before the first command, ttl in the whole milliseconds sent). Failed attempts are released on every
// master and retried after a random delay. Release and Extend are owner-checked Lua
// scripts (EVALSHA, EVAL on NOSCRIPT): another holder's value is never deleted, and a
// master that lost the key is never given it back. Values are owner#<32 hex> (fenced:
// owner#<32 hex>#<token>); ParseValue reads them back.
//
// With WithFencing, every acquisition carries a token strictly greater than that of
// every earlier acquisition of the same resource, as long as no master loses its fence
// counter (<key>:fence; run masters with appendonly yes, appendfsync always). Resource
// names whose key would end in ":fence" are refused (ErrInvalidResource) by every call,
// fenced or not, so a lock never lands on a counter.
//
// Commands from concurrent operations are pipelined: per master, a fixed number of
// connections taken from its pool (one by default) carry every operation, each batch
// written with one flush and the replies matched in order. A stalled master costs each
// operation at most the node timeout and piles up neither goroutines nor memory.
//
// NewInstances also takes masters that are not fixed addresses: a Sentinel group (the
// master the sentinels report, confirmed by ROLE, followed across failovers) or a whole
// Redis Cluster (each key sent to the shard owning its slot, MOVED and ASK followed),
// which counts as one instance. Fencing on a cluster needs a hash tag in every key.
// Package topology (redlock/topology) holds the read-only resolution code it uses.
//
// The admin calls (ExtendValue, ReleaseValue, Delete) act on a value observed on the
// masters rather than on a Lock, wait for every master, and return per-master outcomes
// in a Result; their error is nil whenever at least a quorum of masters answered.
//
// A broken or hostile master must cost its own connection, never the process: the
// connections the client dials itself (Sentinel and Cluster instances) read replies
// through package resp (redlock/resp), which refuses overflowing or oversized lengths
// and deep nesting before redigo allocates anything. Pools given to New are the
// caller's: dial them with resp.Dialer{}.DialOption() to get the same checks.
//
// The restart guard: a master restarted without its data has forgotten locks that are
// still valid. Each connection reads the master's run_id, uptime and persistence when
// it is made (never on the hot path); a master restarted less than the guard ago (by
// default the acquisition's TTL, WithRestartGuard to change it, 0 to turn it off) that
// does not persist every write (appendonly yes, appendfsync always) is not counted
// toward an acquisition's quorum, and the error says which masters were not counted and
// for how long. While a lock is held through Do, every master is pinged every 200 ms; a
// broken connection or a changed run_id extends the lock at once, so the holder learns
// within a round trip that a restart took its quorum. The trade-off: after a fleet-wide
// restart no lock can be taken for one TTL, unless the guard is off or the masters
// fsync every write.
//
// What the library cannot see: a master whose clock runs fast expires keys early, and
// a master restarted without its data forgets locks it granted (the guard above keeps
// it out of new quorums for a while). Lock.Validity is a
// bound computed on the local clock from the TTL; it stays correct only while masters'
// clocks advance at the rate of the local one (within the drift factor) and masters keep
// their keys. Measuring that is the inspector's job (redlockctl doctor).
//
// Usage:
//
//	c, err := redlock.New(pools, redlock.WithFencing())
//	if err != nil { ... }
//	defer c.Close()
//	err = c.Do(ctx, "billing:nightly", 30*time.Second, func(ctx context.Context) error {
//		token := redlock.LockFrom(ctx).Token() // pass it to the storage you protect
//		return runNightly(ctx, token)         // stop when ctx is done: the lock is lost
//	})
package redlock
