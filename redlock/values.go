package redlock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/redlockctl/redlockctl/redlock/topology"
)

// randHexLen is the length of the random part of a value: 16 bytes, lowercase hex.
const randHexLen = 32

// newValue returns owner#<32 lowercase hex>, unique to one acquisition attempt.
func newValue(owner string) string {
	var raw [randHexLen / 2]byte
	rand.Read(raw[:]) // never fails (crypto/rand since Go 1.24)
	b := make([]byte, 0, len(owner)+1+randHexLen+21)
	b = append(b, owner...)
	b = append(b, '#')
	b = hex.AppendEncode(b, raw[:])
	return string(b)
}

// fencedValue appends the fence token: owner#<hex>#<token>.
func fencedValue(base string, token int64) string {
	return base + "#" + strconv.FormatInt(token, 10)
}

// ParseValue splits a value written by this library into its owner and fence token
// (0 when unfenced). ok is false for any other value (redsync, node-redlock, UUIDs...),
// which callers should show as opaque.
func ParseValue(v string) (owner string, token int64, ok bool) {
	i := strings.LastIndexByte(v, '#')
	if i < 0 {
		return "", 0, false
	}
	last := v[i+1:]
	if isRandHex(last) && i > 0 {
		return v[:i], 0, true
	}
	t, err := strconv.ParseInt(last, 10, 64)
	if err != nil || t <= 0 || last[0] == '+' || last[0] == '0' {
		return "", 0, false
	}
	rest := v[:i]
	j := strings.LastIndexByte(rest, '#')
	if j <= 0 || !isRandHex(rest[j+1:]) {
		return "", 0, false
	}
	return rest[:j], t, true
}

func isRandHex(s string) bool {
	if len(s) != randHexLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// FenceSuffix ends the key of a resource's fence counter: FenceKey(key) = key + FenceSuffix.
const FenceSuffix = ":fence"

// FenceKey returns the name of the fence counter kept next to a lock key: <key>:fence.
// Counters have no TTL and are never deleted by this library.
func FenceKey(key string) string { return key + FenceSuffix }

// Key returns the Redis key used for resource: the configured prefix plus the resource.
func (c *Client) Key(resource string) string { return c.opts.keyPrefix + resource }

// checkResource is the one validation of resource names, for every call that takes one:
// a name must be non-empty, and its key must not end in FenceSuffix, or a lock could
// overwrite (or Delete remove) another resource's fence counter.
func (c *Client) checkResource(op, resource string) error {
	if resource == "" {
		return fmt.Errorf("redlock: %s %q: %w: empty", op, resource, ErrInvalidResource)
	}
	if key := c.Key(resource); strings.HasSuffix(key, FenceSuffix) {
		return fmt.Errorf("redlock: %s %q: %w: its key %q ends in %q, which names fence counters",
			op, resource, ErrInvalidResource, key, FenceSuffix)
	}
	if c.opts.fencing && c.clusters > 0 {
		// The fenced script touches key and FenceKey(key) at once: on a cluster both
		// must hash to one slot, which only a hash tag guarantees.
		if _, ok := topology.HashTag(c.Key(resource)); !ok {
			return fmt.Errorf("redlock: %s %q: %w: fencing on a Redis Cluster needs a hash tag in the key (e.g. %q), so that the key and its fence counter share a slot",
				op, resource, ErrInvalidResource, c.opts.keyPrefix+"{"+resource+"}")
		}
	}
	return nil
}
