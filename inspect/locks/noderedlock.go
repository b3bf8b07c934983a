package locks

// nodeRedlock builds the lock for a value in node-redlock's shape: 32 lowercase hex
// characters, crypto.randomBytes(16).toString("hex"), at the resource name itself.
// Verified against mike-marcacci/node-redlock src/index.ts (_random, ACQUIRE_SCRIPT,
// EXTEND_SCRIPT, RELEASE_SCRIPT) at commit afe5cf92c8247ba7b65b4ae36230f415493c44f0
// (v5.0.0-beta.2) and redlock.js at tag v4.2.0, which write the same value.
//
// A lock on several resources puts one value on each of their keys. Extend re-SETs the
// keys only while every one still holds the value, so it never re-creates a deleted
// key. Release is compare-and-delete per key. Only the value's shape points at it, so it
// is a guess (decodeHex32 keeps uuid1-shaped values apart for redis-py).
func nodeRedlock(in input, evidence string) Lock {
	l := guess(in, evidence, NodeRedlock)
	l.Renewal = "extend re-SETs the keys only while all still hold the value; never re-creates a deleted key"
	return l
}
