// Package topology finds where Redis commands must go when the masters of a lock set
// are not fixed addresses: the current master of a Sentinel-managed group, and the
// shard masters and slot owners of a Redis Cluster. The redlock library and the
// inspector share it.
//
// It only reads: it never sends a write command (SENTINEL GET-MASTER-ADDR-BY-NAME,
// ROLE, CLUSTER SHARDS, CLUSTER SLOTS), and every call it makes is bounded by the
// caller's context. It keeps no state; the goroutines a call starts end with it.
package topology

import "strings"

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Slot returns the cluster hash slot of key, as CLUSTER KEYSLOT does: CRC16 (XMODEM)
// mod 16384 of the key's hash tag when it has one (see HashTag), else of the whole key.
func Slot(key string) int {
	if tag, ok := HashTag(key); ok {
		key = tag
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// HashTag returns the part of key between its first "{" and the next "}", and true when
// that part is not empty: then only it is hashed, so keys sharing a tag share a slot.
// A key ending in a suffix (such as a fence counter, key+":fence") keeps the tag and
// therefore the slot.
func HashTag(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}
