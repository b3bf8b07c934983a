package locks

import (
	"strings"
	"time"
)

// decodeShedLock recognises ShedLock's Redis provider: key
// `<keyPrefix>:<environment>:<lockName>` (defaults `job-lock` and `default`), value
// `ADDED:<ISO instant, 3 fraction digits>@<hostname>:<UUID>` (older versions: no
// `:<UUID>`). Verified against lukas-krecan/ShedLock
// providers/redis/shedlock-support-redis/.../InternalRedisLockProvider.java (buildKey,
// buildValue, delLuaScript, updLuaScript) and shedlock-core/.../support/Utils.java
// (toIsoString) at commit 2495b1406d85323b8deadbe75d7a5dd3e8b8e844.
//
// The value carries the holder's host and the time it took the lock. ShedLock holds a
// key for lockAtMostFor and may keep it until lockAtLeastFor after the job ends; extend
// is SET XX or an owner-checked PEXPIRE, never a re-creation. Release is
// compare-and-delete (or, without safeUpdate, a plain DEL).
func decodeShedLock(in input) (Lock, bool) {
	rest, ok := strings.CutPrefix(in.Value, "ADDED:")
	if !ok {
		return Lock{}, false
	}
	at, host, ok := strings.Cut(rest, "@")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || host == "" {
		return Lock{}, false
	}
	id := ""
	if len(host) > 37 && host[len(host)-37] == ':' && isUUID(host[len(host)-36:]) {
		host, id = host[:len(host)-37], host[len(host)-36:]
	}
	ev := "value ADDED:<time>@<host>, as ShedLock writes it"
	if hasPrefix(in.Key, "job-lock:") {
		ev = "key job-lock:<env>:<name> and value ADDED:<time>@<host>, as ShedLock writes them"
	}
	l := stringLock(in, ShedLock, ev)
	l.Owner = host + " at " + t.UTC().Format(time.RFC3339)
	l.Fields = []Field{{"host", host}, {"locked at", t.UTC().Format(time.RFC3339Nano)}}
	if id != "" {
		l.Fields = append(l.Fields, Field{"lock id", id})
	}
	if parts := strings.SplitN(in.Key, ":", 3); len(parts) == 3 && parts[0] == "job-lock" {
		l.Fields = append(l.Fields, Field{"environment", parts[1]}, Field{"job", parts[2]})
	}
	l.Renewal = "held for lockAtMostFor; extend is SET XX or owner-checked PEXPIRE, never a re-creation"
	return l, true
}
