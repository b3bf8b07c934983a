package locks

import (
	"encoding/hex"
	"fmt"
	"time"
)

// decodeHex32 decides between redis-py and node-redlock, which both write 32 lowercase
// hex characters.
//
// redis-py's Lock writes uuid.uuid1().hex, verified against redis/redis-py
// redis/lock.py (acquire, do_acquire, LUA_RELEASE_SCRIPT, LUA_EXTEND_SCRIPT) at commit
// 34817ce2a2accc893a81180fe737e0c4f5ac6b0c: SET NX at the lock name, with PX only when
// a timeout is given (no TTL by default), extend adds time owner-checked and never
// re-creates, release is compare-and-delete. A uuid1 carries the holder's clock at
// acquisition and its node (a MAC address, or random with the multicast bit set).
//
// Neither library has a key convention, so the value's shape is all there is: the
// result is a guess. A random 32-hex value fits the uuid1 layout (version 1, RFC 4122
// variant) once in 64, so the layout alone does not point at redis-py: it is the
// candidate only when the value also carries a timestamp at most redisPyWindow old and
// not in the future (allowing clock skew), which a random value does about once in
// three million. A uuid1-shaped value stamped between 2005 and that window could be an
// old redis-py lock or a random one: both are candidates. Any other 32-hex value is
// node-redlock's shape.
func decodeHex32(in input) (Lock, bool) {
	v := in.Value
	if len(v) != 32 || !isHex(v) {
		return Lock{}, false
	}
	const shape = "value is 32 random lowercase hex chars, node-redlock's randomBytes(16); value shape only"
	if v[12] != '1' || !isVariantRFC(v[16]) {
		return nodeRedlock(in, shape), true
	}
	t, node := uuid1Parts(v)
	switch {
	case !in.now.IsZero() && t.After(in.now.Add(-redisPyWindow)) && !t.After(in.now.Add(redisPySkew)):
		l := guess(in, fmt.Sprintf(
			"value is a uuid1 hex (version 1, RFC variant) stamped %s, redis-py's token; value shape only",
			t.UTC().Format(time.RFC3339)), RedisPy)
		l.Owner = node + "@" + t.UTC().Format(time.RFC3339)
		l.Fields = []Field{{"uuid1 time", t.UTC().Format(time.RFC3339Nano)}, {"uuid1 node", nodeNote(v, node)}}
		l.Renewal = "extend adds time owner-checked (no TTL by default: then never); never re-creates"
		return l, true
	case t.Year() >= 2005 && !t.After(in.now.Add(redisPySkew)):
		l := guess(in, fmt.Sprintf(
			"32 hex in uuid1 layout stamped %s: an old redis-py token, or random hex (node-redlock); value shape only",
			t.UTC().Format(time.RFC3339)), RedisPy, NodeRedlock)
		l.Fields = []Field{{"uuid1 time (if redis-py)", t.UTC().Format(time.RFC3339Nano)}, {"uuid1 node (if redis-py)", nodeNote(v, node)}}
		return l, true
	}
	return nodeRedlock(in, shape), true
}

// The window in which a uuid1 timestamp makes a value redis-py's.
const (
	redisPyWindow = 30 * 24 * time.Hour
	redisPySkew   = time.Hour
)

func isVariantRFC(c byte) bool { return c == '8' || c == '9' || c == 'a' || c == 'b' }

// uuid1EpochUnix is the start of the uuid1 clock, 1582-10-15 UTC, in Unix seconds; the
// clock counts 100 ns ticks.
const uuid1EpochUnix = -12219292800

// uuid1Parts returns a uuid1 hex's time and node (colon-separated octets).
func uuid1Parts(v string) (time.Time, string) {
	var b [16]byte
	hex.Decode(b[:], []byte(v)) // v is 32 hex digits
	ts := uint64(b[6]&0x0f)<<56 | uint64(b[7])<<48 | uint64(b[4])<<40 | uint64(b[5])<<32 |
		uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	t := time.Unix(uuid1EpochUnix+int64(ts/1e7), int64(ts%1e7)*100)
	node := fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[10], b[11], b[12], b[13], b[14], b[15])
	return t, node
}

// nodeNote says whether a uuid1 node is a MAC address or random (multicast bit set).
func nodeNote(v, node string) string {
	if first, _ := hex.DecodeString(v[20:22]); first[0]&1 == 1 {
		return node + " (random node id, not a MAC)"
	}
	return node + " (MAC address of the holder's host)"
}
