package locks

// decodeUUID4 sorts out the libraries whose value is a lowercase UUIDv4 and which can
// only be told apart by key naming:
//   - `redlock:<name>`: RedLock.net or pottery (both use that prefix): Unknown with both;
//   - a key with a colon: aioredlock (bare resource name) or spring-integration
//     (`<registryKey>:<path>`): Unknown with both;
//   - a key without a colon: spring-integration's keys always have one, so aioredlock,
//     by value shape and key naming.
//
// Where RedLock.net or aioredlock may hold it, Recreates warns that the holder puts a
// deleted key back; where spring-integration may, the release also publishes its unlock
// message (harmless to the others).
func decodeUUID4(in *input) (Lock, bool) {
	if !isUUID(in.Value) || uuidVersion(in.Value) != 4 {
		return Lock{}, false
	}
	var l Lock
	switch {
	case hasPrefix(in.Key, "redlock:"):
		l = stringLock(in, Unknown, "UUIDv4 value under redlock:<name>: RedLock.net or pottery (both write this; value shape and key naming only)")
		l.Candidates = []string{RedlockNet, Pottery}
		l.Renewal = "RedLock.net: " + redlockNetRenewal + "; pottery: " + potteryRenewal
		l.Recreates = "if the holder is RedLock.net: " + redlockNetRecreates
	case len(springChannels(in.Key)) > 0:
		l = stringLock(in, Unknown, "UUIDv4 value under a <prefix>:<name> key: aioredlock or spring-integration (both write this; value shape only)")
		l.Candidates = []string{Aioredlock, SpringIntegration}
		l.Renewal = "aioredlock: " + aioredlockRenewal + "; spring-integration: " + springRenewal
		l.Recreates = "if the holder is aioredlock: " + aioredlockRecreates
		l.Release = springRelease(in.Key, in.Value)
	default:
		l = stringLock(in, Aioredlock, "UUIDv4 value at a bare key (no registry prefix, so not spring-integration): aioredlock's shape; value shape only")
		l.Renewal = aioredlockRenewal
		l.Recreates = aioredlockRecreates
	}
	return l, true
}
