package poll

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/wire"
)

// Bounds on what is read of a hash key and its companions: a lock hash has a few
// fields and a fair-lock queue a few waiters.
const (
	hashScanCount = 128 // HSCAN COUNT: a small hash comes back whole in one call
	companionMax  = 64  // LRANGE / ZRANGE of a companion: at most this many items
)

// readHashes reads what the lock decoders need of the hash and sorted-set keys in kb:
// a hash's fields (HSCAN from cursor 0, bounded; a hash that needs more than one call
// is Truncated) and a sorted set's members with their scores (ZRANGE WITHSCORES,
// bounded; one with more members is Truncated) in one round trip, then, in one more
// and only for the keys that look like Redisson locks or semaphores, the companion
// keys locks.Related names (LRANGE, ZRANGE, GET, each bounded). It decodes each key
// and records the result in kb.locks. Read-only.
func (m *masterScan) readHashes(kb *keyBatch) error {
	var idx []int
	for i, t := range kb.types {
		if (t == locks.TypeHash || t == locks.TypeZSet) && kb.pttls[i] != -2 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	rc := m.rc
	count, zmax := strconv.Itoa(hashScanCount), strconv.Itoa(companionMax)
	for _, i := range idx {
		if kb.types[i] == locks.TypeZSet {
			rc.Cmd("ZRANGE", string(kb.keys[i]), "0", zmax, "WITHSCORES")
			continue
		}
		rc.Cmd("HSCAN", string(kb.keys[i]), "0", "COUNT", count)
	}
	t0 := time.Now()
	if err := rc.Flush(); err != nil {
		return err
	}
	rc.Into(nil)
	entries := make([]locks.Entry, len(idx))
	comps := make([][]locks.Companion, len(idx))
	wanted := 0
	for j, i := range idx {
		if kb.types[i] == locks.TypeZSet {
			e, err := m.readZSet(string(kb.keys[i]), kb.pttls[i])
			if err != nil {
				return err
			}
			entries[j], comps[j] = e, locks.Related(e)
			wanted += len(comps[j])
			continue
		}
		e := locks.Entry{Key: string(kb.keys[i]), Type: locks.TypeHash, PTTLMs: kb.pttls[i]}
		cursor, kv, err := m.readScan()
		if err != nil {
			return err
		}
		e.Fields = make(map[string]string, len(kv)/2)
		for k := 0; k+1 < len(kv); k += 2 {
			e.Fields[kv[k]] = kv[k+1]
		}
		e.Truncated = cursor != "0"
		entries[j], comps[j] = e, locks.Related(e)
		wanted += len(comps[j])
	}
	if wanted > 0 {
		cmax := strconv.Itoa(companionMax - 1)
		for _, cs := range comps {
			for _, c := range cs {
				switch c.Type {
				case locks.TypeList:
					rc.Cmd("LRANGE", c.Key, "0", cmax)
				case locks.TypeZSet:
					rc.Cmd("ZRANGE", c.Key, "0", cmax, "WITHSCORES")
				default:
					rc.Cmd("GET", c.Key)
				}
			}
		}
		if err := rc.Flush(); err != nil {
			return err
		}
	}
	kb.locks = make([]*locks.Lock, len(kb.keys))
	for j, i := range idx {
		related := make(map[string]locks.Entry, len(comps[j]))
		for _, c := range comps[j] {
			ce, err := m.readCompanion(c)
			if err != nil {
				return err
			}
			related[c.Key] = ce
		}
		l := locks.Decode(entries[j], related, t0)
		kb.locks[i] = &l
	}
	return nil
}

// readZSet reads the reply to a bounded ZRANGE WITHSCORES of key: the members in score
// order, Truncated when the set has more than companionMax.
func (m *masterScan) readZSet(key string, pttl int64) (locks.Entry, error) {
	e := locks.Entry{Key: key, Type: locks.TypeZSet, PTTLMs: pttl}
	items, err := m.readStrings()
	if err != nil {
		return e, err
	}
	for k := 0; k+1 < len(items); k += 2 {
		s, err := strconv.ParseFloat(items[k+1], 64)
		if err != nil {
			return e, fmt.Errorf("ZRANGE %q: score %q is no number", key, items[k+1])
		}
		e.Items, e.Scores = append(e.Items, items[k]), append(e.Scores, s)
	}
	if len(e.Items) > companionMax {
		e.Items, e.Scores, e.Truncated = e.Items[:companionMax], e.Scores[:companionMax], true
	}
	return e, nil
}

// readCompanion reads the reply to one companion read: absent when empty, nil or of
// another type.
func (m *masterScan) readCompanion(c locks.Companion) (locks.Entry, error) {
	ce := locks.Entry{Key: c.Key, Type: locks.TypeNone, PTTLMs: -2}
	if c.Type == locks.TypeString {
		v, err := m.rc.ReadBulk()
		if err != nil && !isRespError(err) {
			return ce, err
		}
		if v != nil {
			ce.Type, ce.Value, ce.PTTLMs = locks.TypeString, string(v), -1
		}
		return ce, nil
	}
	items, err := m.readStrings()
	if err != nil || len(items) == 0 {
		return ce, err
	}
	ce.Type, ce.PTTLMs = c.Type, -1
	if c.Type != locks.TypeZSet {
		ce.Items = items
		return ce, nil
	}
	for k := 0; k+1 < len(items); k += 2 {
		s, _ := strconv.ParseFloat(items[k+1], 64)
		ce.Items, ce.Scores = append(ce.Items, items[k]), append(ce.Scores, s)
	}
	return ce, nil
}

// readScan reads a SCAN-family reply: the cursor and the items. An error reply (the
// key changed type under us) is an empty, complete scan.
func (m *masterScan) readScan() (string, []string, error) {
	n, err := m.rc.ReadArray()
	if isRespError(err) {
		return "0", nil, nil
	}
	if err != nil || n != 2 {
		return "", nil, errors.Join(errors.New("HSCAN: unexpected reply"), err)
	}
	cur, err := m.rc.ReadBulk()
	if err != nil {
		return "", nil, err
	}
	cursor := string(cur)
	items, err := m.readStrings()
	return cursor, items, err
}

// readStrings reads an array of bulk strings; an error reply (wrong type) is empty.
func (m *masterScan) readStrings() ([]string, error) {
	n, err := m.rc.ReadArray()
	if isRespError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, min(max(n, 0), 64)) // grown as items arrive, not from n
	for range n {
		b, err := m.rc.ReadBulk()
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}

func isRespError(err error) bool {
	var re wire.ReplyError
	return errors.As(err, &re)
}
