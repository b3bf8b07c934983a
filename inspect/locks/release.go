package locks

import "strconv"

// Release protocols, as reported in Release.Protocol and written to the audit log.
const (
	ProtoCompareAndDelete = "compare-and-delete"      // GET == value then DEL
	ProtoRedissonUnlock   = "redisson-unlock"         // DEL + PUBLISH the unlock message
	ProtoSignalList       = "python-redis-lock-reset" // DEL + LPUSH the signal list
	ProtoZRem             = "zrem"                    // ZREM the observed members where they still are
	ProtoNone             = "none"                    // redlockctl does not release this kind
)

// Script replies, the same as the redlock library's owner-checked scripts: every
// release script returns one of these.
const (
	ReplyDone   = 1  // the holder was there and the lock was released
	ReplyAbsent = 0  // no key
	ReplyTaken  = -1 // the key holds another holder (nothing was changed)
)

// Script is one Lua script with its keys and arguments, run as is on every master. It
// returns ReplyDone, ReplyAbsent or ReplyTaken.
type Script struct {
	Lua  string
	Keys []string
	Args []string
	// Command states exactly what the script sends to a master that holds the lock, for
	// the plan and the audit log: `EVAL compare-and-delete: GET "k", DEL "k" if it holds
	// value="v"`.
	Command string
}

// Release is how a lock is released the way its library expects. Checked deletes only
// while the observed holder is still there; Any deletes whatever holds the key (the
// operator's explicit "any value"). Both also wake the library's waiters where it has
// them. Neither ever deletes a fence counter or token key.
type Release struct {
	Protocol string // a Proto* constant
	// Summary says in one line what the release does, for the plan and the audit log.
	Summary string
	Checked Script
	Any     Script
	// Unsupported is set (with Protocol ProtoNone) when redlockctl does not release this
	// lock; it says why and what to use instead.
	Unsupported string
}

// Supported reports whether redlockctl can release the lock.
func (r Release) Supported() bool { return r.Unsupported == "" && r.Checked.Lua != "" }

// The compare-and-delete scripts: KEYS[1] the lock, ARGV[1] the observed value.
const (
	luaCompareAndDelete = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if v then return -1 end
return 0`
	luaDelete = `return redis.call('DEL', KEYS[1])`
)

// PlainRelease is the release of a key no decoder took as a lock of a library with
// waiters to wake: compare-and-delete of value (Checked), DEL (Any).
func PlainRelease(key, value string) Release { return compareAndDelete(key, value) }

// compareAndDelete is the release of every string lock without waiters to wake. Both
// command texts are built in one allocation, as substrings of one string (the quotes
// are strconv's, as fmt's %q).
func compareAndDelete(key, value string) Release {
	var stack [256]byte
	b := append(stack[:0], "EVAL compare-and-delete: GET "...)
	b = strconv.AppendQuote(b, key)
	b = append(b, ", DEL "...)
	b = strconv.AppendQuote(b, key)
	b = append(b, " if it holds value="...)
	b = strconv.AppendQuote(b, value)
	checked := len(b)
	b = append(b, "EVAL: DEL "...)
	b = strconv.AppendQuote(b, key)
	both := string(b)
	return Release{
		Protocol: ProtoCompareAndDelete,
		Summary:  "delete the key where it still holds the observed value",
		Checked: Script{Lua: luaCompareAndDelete, Keys: []string{key}, Args: []string{value},
			Command: both[:checked]},
		Any: Script{Lua: luaDelete, Keys: []string{key}, Command: both[checked:]},
	}
}

// unsupported is the release of a lock that redlockctl leaves to its library.
func unsupported(why string) Release {
	return Release{Protocol: ProtoNone, Summary: why, Unsupported: why}
}
