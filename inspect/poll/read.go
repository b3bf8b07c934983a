package poll

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/inspect/wire"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/resp"
)

// deadlineConn bounds every reply on one connection by one deadline.
type deadlineConn struct {
	c        redis.Conn
	deadline time.Time
}

func (d *deadlineConn) receive() (any, error) {
	left := time.Until(d.deadline)
	if left <= 0 {
		return nil, context.DeadlineExceeded
	}
	return redis.ReceiveWithTimeout(d.c, left)
}

// readMaster reads master mi (or, for a cluster, one shard master: t): TIME and health (when asked) on a pool connection, then
// the keys on a bare RESP connection (*raw, reused between clean polls): SCAN pages,
// each page's keys read with pipelined MGET + PTTL in the round trip of the next SCAN,
// then TYPE/GET/PTTL for the few keys that exist but are not strings. Batches go to
// col as they arrive; a nil col reads no keys. Every reply is bounded by deadline.
//
// With live set, deadline bounds only the first round trips (TIME, INFO); the key read
// then gives each round trip its own inspect.timeout (see liveness), so that a master
// which keeps answering is never cut off by the size of its keyspace.
func readMaster(t target, cfg *config.Config, deadline time.Time, wantHealth bool, raw **wire.Conn, mi int, col *collector, live *wire.Liveness) (res *masterRead) {
	res = &masterRead{}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	fail := func(what string, err error) *masterRead {
		var pe *resp.ProtocolError // a reply that did not end by the deadline says so
		if !errors.As(err, &pe) && (errors.Is(err, context.DeadlineExceeded) || wire.IsTimeout(err)) {
			err = fmt.Errorf("no answer within %v", cfg.Inspect.Timeout)
		}
		res.err = fmt.Errorf("%s: %w", what, err)
		return res
	}
	// TIME alone, so that nothing else inflates its round trip. A kept connection the
	// server closed since the last poll (CLIENT KILL, a timeout) says nothing about the
	// master: the pool's connections are tried, then a new one, before it counts.
	var c redis.Conn
	var reply any
	var sent, recv time.Time
	var err error
	for attempt := 0; ; attempt++ {
		closed := err // the kept connection's close, which names the cause best when no other answers
		if c, err = t.pool.GetContext(ctx); err != nil {
			if closed != nil {
				return fail("TIME", closed)
			}
			res.err = fmt.Errorf("connect: %w", err)
			return res
		}
		sent = time.Now()
		c.Send("TIME")
		if err = c.Flush(); err == nil {
			reply, err = redis.ReceiveWithTimeout(c, max(time.Nanosecond, time.Until(deadline)))
		}
		recv = time.Now()
		if !closedByServer(err) || attempt == maxStaleConns {
			break
		}
		c.Close()
		if raw != nil && *raw != nil { // closed with the others, most likely
			(*raw).Close()
			*raw = nil
		}
	}
	defer c.Close()
	d := &deadlineConn{c: c, deadline: deadline}
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr) && strings.HasPrefix(string(rerr), "NOAUTH"):
		return fail("TIME", err) // no password configured for a master that wants one
	case errors.As(err, &rerr):
		res.timeErr = string(rerr)
	case err != nil:
		return fail("TIME", err)
	default:
		if st, err := parseTime(reply); err == nil {
			res.clock = &verdict.ClockSample{Sent: sent, Received: recv, Server: st}
		} else {
			res.timeErr = err.Error()
		}
	}
	if wantHealth {
		h, err := readHealth(d)
		if err != nil {
			return fail("INFO", err)
		}
		res.health = h
	}

	if col == nil {
		return res // clocks only
	}
	if len(cfg.Inspect.Patterns) == 1 && cfg.Inspect.Patterns[0] == "*" {
		// Every key will be read: a size hint, so that rows are allocated once.
		if n, err := redis.Int64(redis.DoWithTimeout(c, time.Until(deadline), "DBSIZE")); err == nil {
			col.reserve(int(min(n, int64(cfg.Inspect.MaxKeys))))
		} else if _, refused := err.(redis.Error); !refused {
			return fail("DBSIZE", err)
		}
	}
	// The keys: over a bare RESP connection, kept between polls while it stays clean.
	kept := *raw
	*raw = nil
	rc, delivered, kerr := readKeysOn(ctx, t, cfg, deadline, kept, mi, col, live, res)
	if kerr != nil && kept != nil && !delivered && closedByServer(kerr.err) {
		// The kept connection was closed by the server since the last poll, before it
		// delivered anything: once more, on a new one.
		rc, _, kerr = readKeysOn(ctx, t, cfg, deadline, nil, mi, col, live, res)
	}
	if kerr != nil {
		return fail(kerr.what, kerr.err)
	}
	rc.SetLive(nil)
	*raw = rc
	return res
}

// keysError is a failure of the key read, and the step that failed.
type keysError struct {
	what string
	err  error
}

// readKeysOn reads the keys on rc (on a new connection when nil) and returns it, or
// the failure (rc closed) and whether any batch had reached col before it.
func readKeysOn(ctx context.Context, t target, cfg *config.Config, deadline time.Time, rc *wire.Conn, mi int, col *collector, live *wire.Liveness, res *masterRead) (*wire.Conn, bool, *keysError) {
	if rc == nil {
		var err error
		if rc, err = wire.Dial(ctx, t.mc); err != nil {
			return nil, false, &keysError{"connect", err}
		}
	}
	rc.SetLive(live)
	if live == nil {
		if err := rc.SetDeadline(deadline); err != nil {
			rc.Close()
			return nil, false, &keysError{"connect", err}
		}
	}
	m := &masterScan{rc: rc, cfg: cfg, res: res, col: col, mi: mi, t: t}
	if err := m.readKeys(); err != nil {
		rc.Close()
		return nil, m.added, &keysError{"read keys", err}
	}
	return rc, m.added, nil
}

// masterScan is the key-reading part of one master's poll.
type masterScan struct {
	rc  *wire.Conn
	cfg *config.Config
	res *masterRead
	col *collector
	mi  int
	t   target
	odd [][]byte // keys that exist but are not strings: TYPE them at the end

	// Buffers reused from page to page, so that a poll makes little garbage: the keys
	// of a page are read in one round trip and used in the next, hence two arenas
	// and key lists; values die with their round trip.
	keyArena [2][]byte
	keyList  [2][][]byte
	valArena []byte
	vals     [][]byte
	pttls    []int64
	hashes   []uint64
	round    int
	added    bool // a batch reached the collector
}

// readKeys reads the configured resources, then every SCAN page, each page's keys
// read (pipelined MGET + PTTL) in the round trip of the next SCAN, then TYPE for the
// keys that exist but are not strings.
func (m *masterScan) readKeys() error {
	var keys [][]byte
	for _, name := range m.cfg.Inspect.Resources {
		k := m.cfg.Key(name)
		for _, k := range []string{k, k + redlock.FenceSuffix} { // in a cluster, maybe on two shards
			if m.t.owns(k) {
				keys = append(keys, []byte(k))
			}
		}
	}
	if len(keys) > 0 {
		if err := m.readBatch(keys, false, false); err != nil {
			return err
		}
	}
	if err := m.scan(); err != nil {
		return err
	}
	if len(m.odd) == 0 {
		return nil
	}
	t0 := time.Now()
	kb, err := m.readOdd(m.odd)
	if err != nil {
		return err
	}
	return m.addRead(t0, kb, false)
}

// midpoint is the instant halfway from t0 to t1: when a reply that was asked for at t0
// and was in by t1 is taken to have been read.
func midpoint(t0, t1 time.Time) time.Time { return t0.Add(t1.Sub(t0) / 2) }

// addRead is add for a batch asked for at t0 and in now: read at the middle of that
// round trip.
func (m *masterScan) addRead(t0 time.Time, kb *keyBatch, fromScan bool) error {
	now := time.Now()
	kb.rtt = now.Sub(t0)
	return m.add(midpoint(t0, now), kb, fromScan)
}

// add hands a batch read at instant at to the collector; keys that exist without a
// string value are set aside for TYPE.
func (m *masterScan) add(at time.Time, kb *keyBatch, fromScan bool) error {
	m.added = true
	for i := range kb.keys {
		switch {
		case kb.pttls[i] == -2:
			if fromScan {
				m.res.gone++
			}
		case kb.vals[i] == nil && kb.types == nil:
			m.odd = append(m.odd, bytes.Clone(kb.keys[i])) // its buffer is reused
			kb.pttls[i] = -2
		}
	}
	kb.hashes = m.hashes
	ok := m.col.add(m.mi, at, kb)
	m.hashes = kb.hashes
	if !ok {
		return context.DeadlineExceeded
	}
	return nil
}

// page counts a SCAN page against max_keys and returns how many of its keys to keep.
// Keys it drops make the read capped, whichever page crosses the cap: the last page of
// the last pattern too, where SCAN itself would have ended.
func (m *masterScan) page(n int) int {
	if left := m.cfg.Inspect.MaxKeys - m.res.scanned; n > left {
		n, m.res.capped = left, true
	}
	m.res.scanned += n
	return n
}

// scan sends each SCAN page together with the reads of the previous page's keys:
// one round trip per page. The reads go first: the server then looks up the keys of
// the page it walked last, not one page back, and more of them are still in its
// caches (about 4% less server CPU at 5 x 100k, measured). A page's reads are merged
// after the next round trip is sent, so that the server works while the client merges.
func (m *masterScan) scan() error {
	patterns := m.cfg.Inspect.Patterns
	count := strconv.Itoa(m.cfg.Inspect.ScanCount)
	pi, cursor := 0, "0"
	scanning := len(patterns) > 0
	var pending [][]byte
	var kb *keyBatch // read, not merged yet
	var at time.Time // when kb was read
	for scanning || len(pending) > 0 {
		batch := pending
		pending = nil
		m.sendBatch(batch)
		if scanning {
			m.rc.Cmd("SCAN", cursor, "MATCH", patterns[pi], "COUNT", count)
		}
		t0 := time.Now()
		if err := m.rc.Flush(); err != nil {
			return err
		}
		if kb != nil {
			if err := m.add(at, kb, true); err != nil {
				return err
			}
			kb = nil
		}
		m.round++
		if len(batch) > 0 {
			var err error
			if kb, err = m.recvBatch(batch); err != nil {
				return err
			}
			now := time.Now()
			at, kb.rtt = midpoint(t0, now), now.Sub(t0)
		}
		if scanning {
			next, keys, err := m.recvScan()
			if err != nil {
				return fmt.Errorf("SCAN: %w", err)
			}
			pending, cursor = keys[:m.page(len(keys))], next
			if cursor == "0" {
				if pi++; pi >= len(patterns) {
					scanning = false
				}
			}
			// At max_keys the scan goes on only until a page holds a key (capped) or
			// the cursor ends (every key read): a cursor that has not ended may have
			// only empty pages left.
			if m.res.capped {
				scanning = false
			}
		}
	}
	if kb != nil {
		return m.add(at, kb, true)
	}
	return nil
}

func (m *masterScan) recvScan() (string, [][]byte, error) {
	rc := m.rc
	if n, err := rc.ReadArray(); err != nil {
		return "", nil, err
	} else if n != 2 {
		return "", nil, &resp.ProtocolError{Problem: fmt.Sprintf("unexpected reply: an array of %d elements, not [cursor, keys]", n)}
	}
	cur, err := rc.ReadBulk()
	if err != nil {
		return "", nil, err
	}
	cursor := string(cur)
	n, err := rc.ReadArray()
	if err != nil {
		return "", nil, err
	}
	// This page's keys are used in the next round trip: they go to the arena that the
	// previous round trip's keys (now done with) used.
	p := (m.round + 1) % 2
	m.keyArena[p] = m.keyArena[p][:0]
	rc.Into(&m.keyArena[p])
	defer rc.Into(nil)
	keys := m.keyList[p][:0] // grown as keys arrive, never from the length declared
	for range n {
		k, err := rc.ReadBulk()
		if err != nil {
			return "", nil, err
		}
		keys = append(keys, k)
	}
	m.keyList[p] = keys
	return cursor, keys, nil
}

// sendBatch writes MGET of keys and one PTTL per key.
func (m *masterScan) sendBatch(keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	if m.t.cluster {
		// A cluster refuses MGET across slots: one GET per key.
		for _, k := range keys {
			m.rc.KeyCmd("GET", k)
		}
	} else {
		m.rc.Array(len(keys) + 1)
		m.rc.Str("MGET")
		for _, k := range keys {
			m.rc.Bulk(k)
		}
	}
	for _, k := range keys {
		m.rc.KeyCmd("PTTL", k)
	}
}

func (m *masterScan) recvBatch(keys [][]byte) (*keyBatch, error) {
	rc := m.rc
	if cap(m.vals) < len(keys) {
		m.vals, m.pttls = make([][]byte, len(keys)), make([]int64, len(keys))
	}
	m.valArena = m.valArena[:0] // the previous batch's values were copied by the collector
	rc.Into(&m.valArena)
	defer rc.Into(nil)
	kb := &keyBatch{keys: keys, vals: m.vals[:len(keys)], pttls: m.pttls[:len(keys)], shard: m.t.shard}
	clear(kb.vals)
	if m.t.cluster {
		return m.recvClusterBatch(kb)
	}
	n, err := rc.ReadArray()
	if err != nil {
		return nil, fmt.Errorf("MGET: %w", err)
	}
	if n != len(keys) {
		return nil, fmt.Errorf("MGET: %d values for %d keys", n, len(keys))
	}
	for i := range keys {
		if kb.vals[i], err = rc.ReadBulk(); err != nil {
			return nil, fmt.Errorf("MGET: %w", err)
		}
	}
	for i := range keys {
		if kb.pttls[i], err = rc.ReadInt(); err != nil {
			return nil, fmt.Errorf("PTTL: %w", err)
		}
	}
	return kb, nil
}

// readOdd reads TYPE, GET and PTTL of keys that exist but that MGET did not return as
// strings: foreign types, or keys created between the MGET and the PTTL.
func (m *masterScan) readOdd(keys [][]byte) (*keyBatch, error) {
	rc := m.rc
	for _, k := range keys {
		rc.KeyCmd("TYPE", k)
		rc.KeyCmd("GET", k)
		rc.KeyCmd("PTTL", k)
	}
	if err := rc.Flush(); err != nil {
		return nil, err
	}
	kb := &keyBatch{keys: keys, vals: make([][]byte, len(keys)), pttls: make([]int64, len(keys)), types: make([]string, len(keys)), shard: m.t.shard}
	var rerr wire.ReplyError
	for i := range keys {
		typ, err := rc.ReadSimple()
		if m.t.cluster && m.redirected(err) {
			rc.ReadBulk() // GET and PTTL are redirected too
			rc.ReadInt()
			kb.pttls[i] = -2
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("TYPE: %w", err)
		}
		val, err := rc.ReadBulk()
		if err != nil && !errors.As(err, &rerr) { // WRONGTYPE is expected here
			return nil, fmt.Errorf("GET: %w", err)
		}
		pttl, err := rc.ReadInt()
		if err != nil {
			return nil, fmt.Errorf("PTTL: %w", err)
		}
		kb.pttls[i], kb.types[i] = pttl, typ
		if typ == inspect.TypeString {
			kb.vals[i] = val
		}
		if typ == inspect.TypeNone || typ == "" || (typ == inspect.TypeString && val == nil) {
			kb.pttls[i] = -2 // gone, or changed again under us: left to the next poll
		}
	}
	if err := m.readHashes(kb); err != nil {
		return nil, err
	}
	return kb, nil
}

// readHealth sends INFO server/replication/persistence and CONFIG GET of the
// persistence and eviction settings in one round trip. A refused INFO or CONFIG
// leaves "unknown" values, not an error.
func readHealth(d *deadlineConn) (*verdict.Health, error) {
	for _, sec := range []string{"server", "replication", "persistence"} {
		d.c.Send("INFO", sec)
	}
	for _, k := range []string{"appendonly", "appendfsync", "maxmemory", "maxmemory-policy", "min-replicas-to-write"} {
		d.c.Send("CONFIG", "GET", k)
	}
	if err := d.c.Flush(); err != nil {
		return nil, err
	}
	h := &verdict.Health{AppendOnly: "unknown", Fsync: "unknown", Policy: "unknown", Maxmemory: -1, SecondReplOffset: -1, MinReplicas: -1}
	var rerr redis.Error
	for range 3 {
		r, err := d.receive()
		if errors.As(err, &rerr) {
			h.InfoErr = string(rerr)
			continue
		} else if err != nil {
			return nil, err
		}
		s, _ := redis.String(r, nil)
		parseInfo(s, h)
	}
	for i, dst := range []*string{&h.AppendOnly, &h.Fsync, nil, &h.Policy, nil} {
		r, err := d.receive()
		if errors.As(err, &rerr) {
			continue
		} else if err != nil {
			return nil, err
		}
		kv, _ := redis.Strings(r, nil)
		if len(kv) != 2 {
			continue
		}
		if dst != nil {
			*dst = kv[1]
		} else if n, err := strconv.ParseInt(kv[1], 10, 64); err == nil && i == 2 {
			h.Maxmemory = n
		} else if err == nil {
			h.MinReplicas = int(n)
		}
	}
	return h, nil
}

// maxStaleConns is how many kept connections a read may find closed by the server
// before it takes a new one (the pools keep up to 4 idle).
const maxStaleConns = 5

// closedByServer says whether err is the server having closed the connection (EOF,
// reset, broken pipe): a kept connection that went stale, not a master that is silent.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

func parseTime(r any) (time.Time, error) {
	v, err := redis.Int64s(r, nil)
	if err != nil || len(v) != 2 {
		return time.Time{}, fmt.Errorf("unexpected TIME reply")
	}
	return time.Unix(v[0], v[1]*1000), nil
}

// parseInfo reads the fields the doctor needs from an INFO section.
func parseInfo(s string, h *verdict.Health) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch k {
		case "uptime_in_seconds":
			h.UptimeS, _ = strconv.ParseInt(v, 10, 64)
		case "run_id":
			h.RunID = v
		case "role":
			h.Role = v
		case "master_host":
			h.MasterHost = v
		case "master_port":
			h.MasterPort = v
		case "master_replid":
			h.ReplID = v
		case "master_replid2":
			h.ReplID2 = v
		case "second_repl_offset":
			h.SecondReplOffset, _ = strconv.ParseInt(v, 10, 64)
		case "connected_slaves":
			h.Replicas, _ = strconv.Atoi(v)
		case "redis_version":
			if h.Server == "" {
				h.Server, h.Version = "redis", v
			}
		case "server_name": // Valkey 8 says server_name:valkey
			if v != "" && v != "redis" {
				h.Server = v
			}
		case "valkey_version":
			h.Server, h.Version = "valkey", v
		case "aof_enabled":
			if h.AppendOnly == "unknown" {
				h.AppendOnly = map[string]string{"1": "yes", "0": "no"}[v]
			}
		}
	}
}
