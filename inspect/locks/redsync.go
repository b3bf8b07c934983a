package locks

// decodeRedsync recognises go-redsync/redsync's default value: base64 (standard
// alphabet, padded) of 16 random bytes, 24 characters ending in "==", at the mutex name
// itself (no key prefix). Verified against go-redsync/redsync mutex.go (genValue,
// touchScript, touchWithSetNXScript, deleteScript) at commit
// 5560bd2d477db3ce962d5f052bf695543c826751.
//
// Only the value's shape identifies it (WithValue/WithGenValueFunc replace it). Extend is
// an owner-checked PEXPIRE, except with WithSetNXOnExtend, which SETs a missing key
// again: a force-release then lasts until the holder's next Extend. Release is
// compare-and-delete.
func decodeRedsync(in *input) (Lock, bool) {
	v := in.Value
	if len(v) != 24 || v[22:] != "==" || !isBase64(v[:22], b64Std, 16) {
		return Lock{}, false
	}
	l := stringLock(in, Redsync, "value is base64 of 16 bytes (24 chars ending ==), redsync's default genValue; value shape only")
	l.Renewal = "Extend: owner-checked PEXPIRE; with WithSetNXOnExtend it SETs a missing key again"
	l.Recreates = "redsync with WithSetNXOnExtend re-creates a deleted key on its next Extend"
	return l, true
}
