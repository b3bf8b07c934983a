package locks

// decodeBsm recognises bsm/redislock: a token of 16 random bytes in unpadded base64url
// (22 characters), followed by the optional metadata the caller attached, at the key
// the caller named (ObtainMulti puts one value on several keys). Verified against
// bsm/redislock redislock.go (randomToken, Obtain, Lock.Metadata) and obtain.lua,
// refresh.lua, release.lua at commit 76760bd8b28471f9c2a71f27406b7e825c912b95.
//
// The token's last character must carry zero spare bits, as the encoder writes it; a
// random 22-character string passes that one time in 16. The value's shape is all
// there is (the key is the caller's), so the result is a guess. Refresh is an
// owner-checked PEXPIRE that never re-creates; release is compare-and-delete of the
// whole value.
func decodeBsm(in input) (Lock, bool) {
	v := in.Value
	if len(v) < 22 || !isBase64(v[:22], b64URL, 16) {
		return Lock{}, false
	}
	ev := "value is a 22-char base64url token (16 bytes), bsm/redislock's; value shape only"
	if len(v) > 22 {
		ev = "value is a 22-char base64url token (16 bytes) plus metadata, bsm/redislock's; value shape only"
	}
	l := guess(in, ev, BsmRedislock)
	l.Fields = []Field{{"token", v[:22]}}
	if len(v) > 22 {
		l.Fields = append(l.Fields, Field{"metadata", v[22:]})
	}
	l.Renewal = "Refresh: owner-checked PEXPIRE, called by the application; never re-creates"
	return l, true
}
