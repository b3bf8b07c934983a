package locks

import (
	"strings"
)

// decodeRueidislock recognises rueidis' rueidislock, verified against redis/rueidis
// rueidislock/lock.go (keyname, random, acquire, try, delkey, extend) at v1.0.79 (Go
// module proxy). A lock of name is held on one server through 2×KeyMajority−1 keys
// `rueidislock:<i>:<name>` (i from 0; KeyMajority is 2 by default, so 3 keys): each
// acquisition writes one value, 24 random bytes, with SET NX PXAT on every key, and
// holds the lock while a majority of its keys hold that value. Each key is extended by
// an owner-checked PEXPIREAT every ExtendInterval (KeyValidity/2, 5s/2 by default),
// never re-created, and released by compare-and-delete; the holder gives the lock up
// (cancels its context) once a majority of its keys are gone.
//
// Each key is a row of its own, single-instance; the rows of one acquisition share its
// value, which the analysis notes (the same value holds k keys: one lock). Only the
// default key prefix is recognised.
func decodeRueidislock(in input) (Lock, bool) {
	rest, ok := strings.CutPrefix(in.Key, "rueidislock:")
	if !ok || len(in.Value) != 24 {
		return Lock{}, false
	}
	i, name, ok := strings.Cut(rest, ":")
	if !ok || !isDigits(i) || len(i) > 3 || name == "" {
		return Lock{}, false
	}
	l := stringLock(in, Rueidislock, "key rueidislock:<i>:<name> holding 24 bytes, as rueidislock writes each of a lock's keys")
	l.Kind = "multi-key"
	l.Fields = []Field{{"lock name", name}, {"key index", i + " (the lock is held while a majority of its 2×KeyMajority−1 keys hold this value; 3 keys by default)"}}
	l.Renewal = "owner-checked PEXPIREAT of each key every ExtendInterval (KeyValidity/2, 5s/2 by default); never re-creates"
	if in.release {
		l.Release.Summary = "delete this key where it still holds the observed value (rueidislock's delkey); the holder gives the lock up once a majority of its keys are gone"
	}
	return l, true
}
