package poll

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/wire"
)

// Bounds on what is read of a hash key and its companions: a lock hash has a few
// fields and a fair-lock queue a few waiters.
const (
	hashScanCount = 128 // HSCAN COUNT: a small hash comes back whole in one call
	companionMax  = 64  // LRANGE / ZRANGE of a companion: at most this many items
)

// Pipe is a connection to one master that the key reader pipelines its commands on:
// Send queues a command, Flush sends what is queued, and each read takes the next
// reply, in order. The poller's is its RESP connection (wire.Conn); RedigoPipe adapts
// a redigo connection (admin's pools, the live feed's).
type Pipe interface {
	Send(args ...string)
	Flush() error
	// Bulk reads a bulk string reply: nil for a nil reply, an error for an error reply.
	Bulk() ([]byte, error)
	// Int reads an integer reply.
	Int() (int64, error)
	// Status reads a simple string reply (TYPE's).
	Status() (string, error)
	// Strings reads an array of bulk strings; an error reply (the key changed type
	// since TYPE) is an empty array.
	Strings() ([]string, error)
	// Scan reads a SCAN-family reply: the cursor and the items; an error reply is an
	// empty, complete scan.
	Scan() (cursor string, items []string, err error)
}

// KeyRead is what one master holds at one key, as ReadKeys read it: the key (its type,
// PTTL, a string's value, a hash's fields or a sorted set's members) and the
// companion keys its decoder needs (locks.Related), by key. locks.See turns it into
// what locks.Identify takes.
type KeyRead struct {
	Entry   locks.Entry
	Related map[string]locks.Entry
}

// ReadKeys is the key reader: it reads keys on one master through p in at most three
// round trips: TYPE, PTTL and GET of each (GET of a key of another type is refused
// and ignored); then the fields of each hash (HSCAN from cursor 0, bounded: a hash
// that needs more than one call is Truncated) and the members of each sorted set with
// their scores (ZRANGE WITHSCORES, bounded); then, only for the keys that look like
// Redisson locks or semaphores, the companion keys locks.Related names (LRANGE,
// ZRANGE, GET, each bounded). Read-only. The poller reads keys the same way, with its
// first round trip batched with its scan.
func ReadKeys(p Pipe, keys []string) ([]KeyRead, error) {
	for _, k := range keys {
		p.Send("TYPE", k)
		p.Send("PTTL", k)
		p.Send("GET", k)
	}
	if err := p.Flush(); err != nil {
		return nil, err
	}
	reads := make([]KeyRead, len(keys))
	for i, k := range keys {
		e := locks.Entry{Key: k}
		typ, err := p.Status()
		if err != nil {
			return nil, err
		}
		if e.PTTLMs, err = p.Int(); err != nil {
			return nil, err
		}
		v, err := p.Bulk()
		if err != nil && (!isReplyError(err) || typ == locks.TypeString) {
			return nil, err // a refused GET of another type is expected; of a string it is not
		}
		e.Type = typ
		if typ == locks.TypeString && v != nil {
			e.Value = string(v)
		}
		reads[i].Entry = e
	}
	entries := make([]*locks.Entry, 0, len(keys))
	for i := range reads {
		if t := reads[i].Entry.Type; (t == locks.TypeHash || t == locks.TypeZSet) && reads[i].Entry.PTTLMs != -2 {
			entries = append(entries, &reads[i].Entry)
		}
	}
	related, err := readStructured(p, entries)
	if err != nil {
		return nil, err
	}
	for i, j := 0, 0; i < len(reads) && j < len(entries); i++ {
		if &reads[i].Entry == entries[j] {
			reads[i].Related = related[j]
			j++
		}
	}
	return reads, nil
}

// readStructured reads what the lock decoders need of entries, hashes and sorted
// sets whose Key, Type and PTTLMs are known (the second and third round trips of
// ReadKeys), filling each entry's fields or members and returning its companions.
func readStructured(p Pipe, entries []*locks.Entry) ([]map[string]locks.Entry, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	count, zmax := strconv.Itoa(hashScanCount), strconv.Itoa(companionMax)
	for _, e := range entries {
		if e.Type == locks.TypeZSet {
			p.Send("ZRANGE", e.Key, "0", zmax, "WITHSCORES")
			continue
		}
		p.Send("HSCAN", e.Key, "0", "COUNT", count)
	}
	if err := p.Flush(); err != nil {
		return nil, err
	}
	comps := make([][]locks.Companion, len(entries))
	wanted := 0
	for j, e := range entries {
		if e.Type == locks.TypeZSet {
			if err := readZSet(p, e); err != nil {
				return nil, err
			}
		} else {
			cursor, kv, err := p.Scan()
			if err != nil {
				return nil, err
			}
			e.Fields = make(map[string]string, len(kv)/2)
			for k := 0; k+1 < len(kv); k += 2 {
				e.Fields[kv[k]] = kv[k+1]
			}
			e.Truncated = cursor != "0"
		}
		comps[j] = locks.Related(*e)
		wanted += len(comps[j])
	}
	if wanted > 0 {
		cmax := strconv.Itoa(companionMax - 1)
		for _, cs := range comps {
			for _, c := range cs {
				switch c.Type {
				case locks.TypeList:
					p.Send("LRANGE", c.Key, "0", cmax)
				case locks.TypeZSet:
					p.Send("ZRANGE", c.Key, "0", cmax, "WITHSCORES")
				default:
					p.Send("GET", c.Key)
				}
			}
		}
		if err := p.Flush(); err != nil {
			return nil, err
		}
	}
	related := make([]map[string]locks.Entry, len(entries))
	for j := range entries {
		related[j] = make(map[string]locks.Entry, len(comps[j]))
		for _, c := range comps[j] {
			ce, err := readCompanion(p, c)
			if err != nil {
				return nil, err
			}
			related[j][c.Key] = ce
		}
	}
	return related, nil
}

// readZSet reads the reply to a bounded ZRANGE WITHSCORES of e.Key into e: the
// members in score order, Truncated when the set has more than companionMax.
func readZSet(p Pipe, e *locks.Entry) error {
	items, err := p.Strings()
	if err != nil {
		return err
	}
	for k := 0; k+1 < len(items); k += 2 {
		s, err := strconv.ParseFloat(items[k+1], 64)
		if err != nil {
			return fmt.Errorf("ZRANGE %q: score %q is no number", e.Key, items[k+1])
		}
		e.Items, e.Scores = append(e.Items, items[k]), append(e.Scores, s)
	}
	if len(e.Items) > companionMax {
		e.Items, e.Scores, e.Truncated = e.Items[:companionMax], e.Scores[:companionMax], true
	}
	return nil
}

// readCompanion reads the reply to one companion read: absent when empty, nil or of
// another type.
func readCompanion(p Pipe, c locks.Companion) (locks.Entry, error) {
	ce := locks.Entry{Key: c.Key, Type: locks.TypeNone, PTTLMs: -2}
	if c.Type == locks.TypeString {
		v, err := p.Bulk()
		if err != nil && !isReplyError(err) {
			return ce, err
		}
		if v != nil && err == nil {
			ce.Type, ce.Value, ce.PTTLMs = locks.TypeString, string(v), -1
		}
		return ce, nil
	}
	items, err := p.Strings()
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

// readHashes reads what the lock decoders need of the hash and sorted-set keys in kb
// with the key reader's second and third round trips (readStructured) on the poller's
// connection, decodes each key and records the result in kb.locks. Read-only.
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
	entries := make([]locks.Entry, len(idx))
	ptrs := make([]*locks.Entry, len(idx))
	for j, i := range idx {
		entries[j] = locks.Entry{Key: string(kb.keys[i]), Type: kb.types[i], PTTLMs: kb.pttls[i]}
		ptrs[j] = &entries[j]
	}
	m.rc.Into(nil)
	t0 := time.Now()
	related, err := readStructured(connPipe{m.rc}, ptrs)
	if err != nil {
		return err
	}
	kb.locks = make([]*locks.Lock, len(kb.keys))
	for j, i := range idx {
		kb.locks[i] = locks.See(entries[j], related[j], t0).Lock
	}
	return nil
}

// connPipe is the key reader's Pipe over the poller's RESP connection.
type connPipe struct{ rc *wire.Conn }

func (p connPipe) Send(args ...string)     { p.rc.Cmd(args...) }
func (p connPipe) Flush() error            { return p.rc.Flush() }
func (p connPipe) Bulk() ([]byte, error)   { return p.rc.ReadBulk() }
func (p connPipe) Int() (int64, error)     { return p.rc.ReadInt() }
func (p connPipe) Status() (string, error) { return p.rc.ReadSimple() }

func (p connPipe) Scan() (string, []string, error) {
	n, err := p.rc.ReadArray()
	if isReplyError(err) {
		return "0", nil, nil
	}
	if err != nil || n != 2 {
		return "", nil, errors.Join(errors.New("HSCAN: unexpected reply"), err)
	}
	cur, err := p.rc.ReadBulk()
	if err != nil {
		return "", nil, err
	}
	cursor := string(cur)
	items, err := p.Strings()
	return cursor, items, err
}

func (p connPipe) Strings() ([]string, error) {
	n, err := p.rc.ReadArray()
	if isReplyError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, min(max(n, 0), 64)) // grown as items arrive, not from n
	for range n {
		b, err := p.rc.ReadBulk()
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}

// RedigoPipe is the key reader's Pipe over a redigo connection, each reply bounded by
// ctx's deadline (see receive).
func RedigoPipe(ctx context.Context, conn redis.Conn) Pipe { return redigoPipe{ctx, conn} }

type redigoPipe struct {
	ctx  context.Context
	conn redis.Conn
}

func (p redigoPipe) Send(args ...string) {
	as := make([]any, len(args)-1)
	for i, a := range args[1:] {
		as[i] = a
	}
	p.conn.Send(args[0], as...) // an error here is the connection's: Flush returns it
}

func (p redigoPipe) Flush() error { return p.conn.Flush() }

// receive reads the next reply by ctx's deadline, set on the connection: redigo's
// ReceiveContext starts a goroutine for every reply, which cost the live feed's reader
// a fifth of the feed's CPU. A ctx without a deadline is followed as it is.
func (p redigoPipe) receive() (any, error) {
	dl, ok := p.ctx.Deadline()
	if !ok {
		return redis.ReceiveContext(p.conn, p.ctx)
	}
	if err := p.ctx.Err(); err != nil {
		return nil, err
	}
	left := time.Until(dl)
	if left <= 0 {
		return nil, context.DeadlineExceeded
	}
	return redis.ReceiveWithTimeout(p.conn, left)
}

func (p redigoPipe) Bulk() ([]byte, error) {
	v, err := redis.Bytes(p.receive())
	if errors.Is(err, redis.ErrNil) {
		return nil, nil
	}
	var re redis.Error
	if errors.As(err, &re) {
		return nil, wire.ReplyError(re.Error())
	}
	return v, err
}

func (p redigoPipe) Int() (int64, error)     { return redis.Int64(p.receive()) }
func (p redigoPipe) Status() (string, error) { return redis.String(p.receive()) }

func (p redigoPipe) Strings() ([]string, error) {
	v, err := redis.Strings(p.receive())
	var re redis.Error
	if errors.As(err, &re) {
		return nil, nil
	}
	return v, err
}

func (p redigoPipe) Scan() (string, []string, error) {
	r, err := redis.Values(p.receive())
	var re redis.Error
	if errors.As(err, &re) {
		return "0", nil, nil
	}
	if err != nil || len(r) != 2 {
		return "", nil, errors.Join(errors.New("HSCAN: unexpected reply"), err)
	}
	cursor, err := redis.String(r[0], nil)
	if err != nil {
		return "", nil, err
	}
	items, err := redis.Strings(r[1], nil)
	return cursor, items, err
}

// isReplyError reports whether err is an error reply from the server.
func isReplyError(err error) bool {
	var re wire.ReplyError
	return errors.As(err, &re)
}
