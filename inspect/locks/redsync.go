package locks

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// decodeBase64x16 sorts out the two libraries whose value is base64 (standard
// alphabet, padded) of 16 bytes: 24 characters ending in "==".
//
// go-redsync/redsync writes 16 random bytes at the mutex name itself (no key prefix).
// Verified against go-redsync/redsync mutex.go (genValue, touchScript,
// touchWithSetNXScript, deleteScript) at commit 5560bd2d477db3ce962d5f052bf695543c826751.
// Extend is an owner-checked PEXPIRE, except with WithSetNXOnExtend, which SETs a
// missing key again. Release is compare-and-delete. Nothing but the value's shape points
// at redsync, so it is only ever a candidate.
//
// node-redis-warlock writes `<name>:lock` holding the 16 bytes of a uuid v1 (its
// timestamp and node) in base64. Verified against node-redis-warlock lib/warlock.js
// (makeKey, lock, unlock, touch) and lib/lua/parityDel.lua at version 1.0.2 (npm).
// Touch is an owner-checked PEXPIRE; release is compare-and-delete. It is named when
// the key ends in ":lock" and the bytes are a uuid1 stamped within redisPyWindow (a
// random value does that about once in 200 million); a uuid1 with an older stamp under
// such a key is either library.
func decodeBase64x16(in input) (Lock, bool) {
	v := in.Value
	if len(v) != 24 || v[22:] != "==" || !isBase64(v[:22], b64Std, 16) {
		return Lock{}, false
	}
	var b [18]byte // base64.StdEncoding.DecodedLen(24): room for the 16 bytes of the value
	base64.StdEncoding.Decode(b[:], []byte(v))
	uuid1 := b[6]>>4 == 1 && b[8]>>6 == 2
	if !strings.HasSuffix(in.Key, ":lock") || !uuid1 {
		l := guess(in, "value is base64 of 16 bytes (24 chars ending ==), redsync's default genValue; value shape only", Redsync)
		l.Renewal = redsyncRenewal
		l.Recreates = "if the holder is redsync with WithSetNXOnExtend: it re-creates a deleted key on its next Extend"
		return l, true
	}
	t, node := uuid1Parts(hex.EncodeToString(b[:16]))
	if !in.now.IsZero() && t.After(in.now.Add(-redisPyWindow)) && !t.After(in.now.Add(redisPySkew)) {
		l := stringLock(in, Warlock, fmt.Sprintf(
			"key <name>:lock holding base64 of a uuid1 stamped %s, as node-redis-warlock writes them",
			t.UTC().Format(time.RFC3339)))
		l.Owner = node + "@" + t.UTC().Format(time.RFC3339)
		l.Fields = []Field{{"uuid1 time", t.UTC().Format(time.RFC3339Nano)}, {"uuid1 node", node}}
		l.Renewal = warlockRenewal
		return l, true
	}
	l := guess(in, "key <name>:lock holding base64 of 16 bytes in uuid1 layout with an old stamp: node-redis-warlock's or redsync's", Redsync, Warlock)
	l.Renewal = "redsync: " + redsyncRenewal + "; warlock: " + warlockRenewal
	return l, true
}

const (
	redsyncRenewal = "Extend: owner-checked PEXPIRE; with WithSetNXOnExtend it SETs a missing key again"
	warlockRenewal = "touch: owner-checked PEXPIRE, called by the application; never re-creates"
)
