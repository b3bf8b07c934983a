package inspect

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// maxChunk bounds the keys read by one script call (Lua's unpack limit is 8000).
const maxChunk = 1000

// batchScript reads values and PTTLs of KEYS in one call, packed to spare the client
// one reply per key: it returns {lengths, values, pttls}, where values is every
// present string value concatenated, lengths and pttls are comma-separated decimals
// (length -1 for an absent or non-string key). It cannot write.
var batchScript = redis.NewScript(-1, batchSource)

const batchSource = `#!lua flags=no-writes
local v = redis.call('MGET', unpack(KEYS))
local lens, vals, pttls = {}, {}, {}
for i = 1, #KEYS do
  local x = v[i]
  if x then
    lens[i] = #x
    vals[#vals+1] = x
  else
    lens[i] = -1
  end
  pttls[i] = redis.call('PTTL', KEYS[i])
end
return {table.concat(lens, ','), table.concat(vals), table.concat(pttls, ',')}
`

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

// readMaster reads master mi: TIME, health (when asked), then SCAN pages, each page's
// keys read in the next round trip together with the following SCAN (one read-only
// script call per chunk of keys, or pipelined MGET + PTTL where scripts are refused),
// then TYPE/GET/PTTL for the few keys that exist but are not strings. Batches go to
// col as they arrive. Every reply is bounded by deadline.
func readMaster(pool *redis.Pool, cfg *Config, deadline time.Time, wantHealth bool, noScript *atomic.Bool, mi int, col *collector) (res *masterRead) {
	res = &masterRead{}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	c, err := pool.GetContext(ctx)
	if err != nil {
		res.err = fmt.Errorf("connect: %w", err)
		return res
	}
	defer c.Close()
	d := &deadlineConn{c: c, deadline: deadline}
	fail := func(what string, err error) *masterRead {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			err = errors.New("no answer within the poll deadline")
		}
		res.err = fmt.Errorf("%s: %w", what, err)
		return res
	}

	// TIME alone, so that nothing else inflates its round trip.
	sent := time.Now()
	c.Send("TIME")
	if err := c.Flush(); err != nil {
		return fail("TIME", err)
	}
	reply, err := d.receive()
	recv := time.Now()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		res.timeErr = string(rerr)
	case err != nil:
		return fail("TIME", err)
	default:
		if st, err := parseTime(reply); err == nil {
			res.clock = &ClockSample{Sent: sent, Received: recv, Server: st}
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

	if len(cfg.Inspect.Patterns) == 1 && cfg.Inspect.Patterns[0] == "*" {
		// Every key will be read: a size hint, so that rows are allocated once.
		if n, err := redis.Int64(redis.DoWithTimeout(c, time.Until(deadline), "DBSIZE")); err == nil {
			col.reserve(int(min(n, int64(cfg.Inspect.MaxKeys))))
		} else if _, refused := err.(redis.Error); !refused {
			return fail("DBSIZE", err)
		}
	}
	m := &masterScan{d: d, cfg: cfg, res: res, col: col, mi: mi, br: &batchReader{d: d, noScript: noScript}}
	if len(cfg.Inspect.Resources) > 0 {
		var keys [][]byte
		for _, name := range cfg.Inspect.Resources {
			keys = append(keys, []byte(cfg.Key(name)), []byte(cfg.Key(name)+FenceSuffix))
		}
		m.br.send(keys)
		t0 := time.Now()
		if err := c.Flush(); err != nil {
			return fail("send", err)
		}
		kb, err := m.br.receive(keys)
		if err != nil {
			return fail("read resources", err)
		}
		if err := m.add(t0, kb, false); err != nil {
			return fail("read resources", err)
		}
	}
	scripted := false
	if !noScript.Load() {
		var err error
		if scripted, err = m.scanScripted(); err != nil {
			return fail("SCAN", err)
		}
	}
	if !scripted {
		if err := m.scanPipelined(); err != nil {
			return fail("SCAN", err)
		}
	}
	if len(m.odd) > 0 {
		t0 := time.Now()
		kb, err := readOdd(d, m.odd)
		if err != nil {
			return fail("TYPE", err)
		}
		if err := m.add(t0, kb, false); err != nil {
			return fail("TYPE", err)
		}
	}
	return res
}

// masterScan is the key-reading part of one master's poll.
type masterScan struct {
	d   *deadlineConn
	cfg *Config
	res *masterRead
	col *collector
	mi  int
	br  *batchReader
	odd [][]byte // keys that exist but are not strings: TYPE them at the end
}

// add hands a batch read since t0 to the collector; keys that exist without a string
// value are set aside for TYPE.
func (m *masterScan) add(t0 time.Time, kb *keyBatch, fromScan bool) error {
	t1 := time.Now()
	for i := range kb.keys {
		switch {
		case kb.pttls[i] == -2:
			if fromScan {
				m.res.gone++
			}
		case kb.vals[i] == nil && kb.types == nil:
			m.odd = append(m.odd, kb.keys[i])
			kb.pttls[i] = -2
		}
	}
	if !m.col.add(m.mi, t0.Add(t1.Sub(t0)/2), kb) {
		return context.DeadlineExceeded
	}
	return nil
}

// page counts a SCAN page against max_keys and returns how many of its keys to keep.
func (m *masterScan) page(n int) int {
	if left := m.cfg.Inspect.MaxKeys - m.res.scanned; n > left {
		n = left
	}
	m.res.scanned += n
	return n
}

// scanScripted reads every page with one script call (SCAN, MGET and PTTL on the
// server, packed replies). It returns false, having read nothing, when the server
// refuses the script.
func (m *masterScan) scanScripted() (bool, error) {
	count := min(m.cfg.Inspect.ScanCount, maxChunk)
	for pi, pat := range m.cfg.Inspect.Patterns {
		for cursor := "0"; ; {
			t0 := time.Now()
			pageScript.SendHash(m.d.c, cursor, pat, count)
			if err := m.d.c.Flush(); err != nil {
				return false, err
			}
			rep, err := m.d.receive()
			var rerr redis.Error
			if errors.As(err, &rerr) {
				if pi == 0 && cursor == "0" && strings.HasPrefix(string(rerr), "NOSCRIPT") {
					if _, err := redis.DoWithTimeout(m.d.c, time.Until(m.d.deadline), "SCRIPT", "LOAD", pageSource); err == nil {
						continue
					}
				}
				if pi == 0 && cursor == "0" {
					m.br.noScript.Store(true)
					return false, nil
				}
				return false, err
			} else if err != nil {
				return false, err
			}
			next, kb, err := parsePage(rep)
			if err != nil {
				return false, err
			}
			n := m.page(len(kb.keys))
			kb.keys, kb.vals, kb.pttls = kb.keys[:n], kb.vals[:n], kb.pttls[:n]
			if err := m.add(t0, kb, true); err != nil {
				return false, err
			}
			cursor = next
			if m.res.scanned >= m.cfg.Inspect.MaxKeys && (cursor != "0" || pi < len(m.cfg.Inspect.Patterns)-1) {
				m.res.capped = true
				return true, nil
			}
			if cursor == "0" {
				break
			}
		}
	}
	return true, nil
}

// scanPipelined sends each SCAN page together with the reads of the previous page's
// keys (pipelined MGET + PTTL): one round trip per page.
func (m *masterScan) scanPipelined() error {
	patterns := m.cfg.Inspect.Patterns
	pi, cursor := 0, "0"
	scanning := len(patterns) > 0
	var pending [][]byte
	for scanning || len(pending) > 0 {
		if scanning {
			m.d.c.Send("SCAN", cursor, "MATCH", patterns[pi], "COUNT", m.cfg.Inspect.ScanCount)
		}
		batch := pending
		pending = nil
		m.br.send(batch)
		t0 := time.Now()
		if err := m.d.c.Flush(); err != nil {
			return err
		}
		if scanning {
			rep, err := m.d.receive()
			if err != nil {
				return err
			}
			next, keys, err := parseScan(rep)
			if err != nil {
				return err
			}
			pending, cursor = keys[:m.page(len(keys))], next
			if cursor == "0" {
				if pi++; pi >= len(patterns) {
					scanning = false
				}
			}
			if scanning && m.res.scanned >= m.cfg.Inspect.MaxKeys {
				scanning, m.res.capped = false, true
			}
		}
		if len(batch) == 0 {
			continue
		}
		kb, err := m.br.receive(batch)
		if err != nil {
			return err
		}
		if err := m.add(t0, kb, true); err != nil {
			return err
		}
	}
	return nil
}

// pageScript reads one SCAN page and its keys' values and PTTLs in one call:
// ARGV cursor, pattern, count; it returns {next cursor, key lengths, keys, value
// lengths, values, pttls}, lengths and pttls comma-separated, keys and values
// concatenated (value length -1: absent or not a string). It cannot write.
var pageScript = redis.NewScript(0, pageSource)

const pageSource = `#!lua flags=no-writes
local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local keys = r[2]
local klens, vlens, vals, pttls = {}, {}, {}, {}
local v = {}
if #keys > 0 then v = redis.call('MGET', unpack(keys)) end
for i = 1, #keys do
  local k = keys[i]
  klens[i] = #k
  local x = v[i]
  if x then
    vlens[i] = #x
    vals[#vals+1] = x
  else
    vlens[i] = -1
  end
  pttls[i] = redis.call('PTTL', k)
end
return {r[1], table.concat(klens, ','), table.concat(keys), table.concat(vlens, ','), table.concat(vals), table.concat(pttls, ',')}
`

// parsePage unpacks a pageScript reply.
func parsePage(rep any) (string, *keyBatch, error) {
	parts, ok := rep.([]any)
	if !ok || len(parts) != 6 {
		return "", nil, fmt.Errorf("unexpected page reply %T", rep)
	}
	var b [6][]byte
	for i, p := range parts {
		b[i], _ = p.([]byte)
	}
	klens, keys := b[1], b[2]
	n := 0
	if len(klens) > 0 {
		n = strings.Count(string(klens), ",") + 1
	}
	kb := &keyBatch{keys: make([][]byte, n), vals: make([][]byte, n), pttls: make([]int64, n)}
	for i := range n {
		size, rest, err := nextInt(klens)
		if err != nil || size < 0 || size > int64(len(keys)) {
			return "", nil, fmt.Errorf("page reply: bad key length")
		}
		klens, kb.keys[i], keys = rest, keys[:size:size], keys[size:]
	}
	if err := fillScript(kb, 0, n, []any{b[3], b[4], b[5]}); err != nil {
		return "", nil, err
	}
	return string(b[0]), kb, nil
}

// batchReader sends and receives the reads of key batches, by script or pipeline.
type batchReader struct {
	d        *deadlineConn
	noScript *atomic.Bool
	scripted bool // the batch in flight was sent as script calls
}

func chunks(keys [][]byte) [][][]byte {
	var out [][][]byte
	for len(keys) > maxChunk {
		out = append(out, keys[:maxChunk])
		keys = keys[maxChunk:]
	}
	if len(keys) > 0 {
		out = append(out, keys)
	}
	return out
}

func (r *batchReader) send(keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	r.scripted = !r.noScript.Load()
	for _, ch := range chunks(keys) {
		if r.scripted {
			batchScript.SendHash(r.d.c, keyArgs(len(ch), ch)...)
		} else {
			sendPipeline(r.d.c, ch)
		}
	}
}

func keyArgs(prefix int, keys [][]byte) []any {
	args := make([]any, 0, len(keys)+1)
	args = append(args, prefix)
	for _, k := range keys {
		args = append(args, k)
	}
	return args
}

func sendPipeline(c redis.Conn, keys [][]byte) {
	c.Send("MGET", keyArgs(0, keys)[1:]...)
	for _, k := range keys {
		c.Send("PTTL", k)
	}
}

// receive reads the replies for keys as sent by send. A script missing from the
// server's cache is loaded and the batch read again; a refused script (NOPERM, an old
// server, anything else) switches this master to pipelining for good.
func (r *batchReader) receive(keys [][]byte) (*keyBatch, error) {
	for attempt := 0; ; attempt++ {
		kb, refused, err := r.receiveOnce(keys)
		if err != nil || refused == nil {
			return kb, err
		}
		if attempt == 0 && strings.HasPrefix(refused.Error(), "NOSCRIPT") {
			r.d.c.Send("SCRIPT", "LOAD", batchSource)
			if err := r.d.c.Flush(); err != nil {
				return nil, err
			}
			if _, err := r.d.receive(); err != nil {
				r.noScript.Store(true)
			}
		} else {
			r.noScript.Store(true)
		}
		r.send(keys)
		if err := r.d.c.Flush(); err != nil {
			return nil, err
		}
	}
}

// receiveOnce reads every chunk's replies; refused is the first error a script call
// returned (the other chunks' replies are still consumed).
func (r *batchReader) receiveOnce(keys [][]byte) (kb *keyBatch, refused, err error) {
	kb = &keyBatch{keys: keys, vals: make([][]byte, len(keys)), pttls: make([]int64, len(keys))}
	off := 0
	for _, ch := range chunks(keys) {
		if !r.scripted {
			if err := r.receivePipeline(kb, off, len(ch)); err != nil {
				return nil, nil, err
			}
			off += len(ch)
			continue
		}
		rep, err := r.d.receive()
		var rerr redis.Error
		switch {
		case errors.As(err, &rerr):
			if refused == nil {
				refused = err
			}
		case err != nil:
			return nil, nil, err
		case refused == nil:
			if err := fillScript(kb, off, len(ch), rep); err != nil {
				return nil, nil, err
			}
		}
		off += len(ch)
	}
	return kb, refused, nil
}

func (r *batchReader) receivePipeline(kb *keyBatch, off, n int) error {
	rep, err := r.d.receive()
	if err != nil {
		return err
	}
	vals, ok := rep.([]any)
	if !ok || len(vals) != n {
		return fmt.Errorf("unexpected MGET reply %T", rep)
	}
	for i := range n {
		if b, ok := vals[i].([]byte); ok {
			kb.vals[off+i] = b
		}
		p, err := r.d.receive()
		if err != nil {
			return err
		}
		pttl, ok := p.(int64)
		if !ok {
			return fmt.Errorf("unexpected PTTL reply %T", p)
		}
		kb.pttls[off+i] = pttl
	}
	return nil
}

func fillScript(kb *keyBatch, off, n int, rep any) error {
	parts, ok := rep.([]any)
	if !ok || len(parts) != 3 {
		return fmt.Errorf("unexpected script reply %T", rep)
	}
	lens, _ := parts[0].([]byte)
	blob, _ := parts[1].([]byte)
	pttls, _ := parts[2].([]byte)
	for i := off; i < off+n; i++ {
		var size, p int64
		var err error
		if size, lens, err = nextInt(lens); err != nil {
			return fmt.Errorf("script reply lengths: %w", err)
		}
		if p, pttls, err = nextInt(pttls); err != nil {
			return fmt.Errorf("script reply PTTLs: %w", err)
		}
		kb.pttls[i] = p
		if size >= 0 {
			if size > int64(len(blob)) {
				return errors.New("script reply values too short")
			}
			kb.vals[i], blob = blob[:size:size], blob[size:]
		}
	}
	if len(lens) != 0 || len(pttls) != 0 || len(blob) != 0 {
		return errors.New("script reply longer than its batch")
	}
	return nil
}

// nextInt parses a decimal up to the next comma of b and returns the rest.
func nextInt(b []byte) (int64, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errors.New("short")
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	i := 0
	for ; i < len(b) && b[i] != ','; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, nil, fmt.Errorf("bad digit %q", c)
		}
		n = n*10 + int64(c-'0')
	}
	if i == 0 {
		return 0, nil, errors.New("empty number")
	}
	if neg {
		n = -n
	}
	if i < len(b) {
		i++ // the comma
	}
	return n, b[i:], nil
}

// readOdd reads TYPE, GET and PTTL of keys that exist but that MGET did not return as
// strings: foreign types, or keys created between the MGET and the PTTL.
func readOdd(d *deadlineConn, keys [][]byte) (*keyBatch, error) {
	for _, k := range keys {
		d.c.Send("TYPE", k)
		d.c.Send("GET", k)
		d.c.Send("PTTL", k)
	}
	if err := d.c.Flush(); err != nil {
		return nil, err
	}
	kb := &keyBatch{keys: keys, vals: make([][]byte, len(keys)), pttls: make([]int64, len(keys)), types: make([]string, len(keys))}
	var rerr redis.Error
	for i := range keys {
		tr, err := d.receive()
		if err != nil {
			return nil, err
		}
		typ, _ := redis.String(tr, nil)
		gr, gerr := d.receive()
		if gerr != nil && !errors.As(gerr, &rerr) { // WRONGTYPE is expected here
			return nil, gerr
		}
		pr, err := d.receive()
		if err != nil {
			return nil, err
		}
		pttl, _ := pr.(int64)
		kb.pttls[i], kb.types[i] = pttl, typ
		if b, ok := gr.([]byte); ok && typ == TypeString {
			kb.vals[i] = b
		}
		if typ == TypeNone || typ == "" {
			kb.pttls[i] = -2
		}
		if typ == TypeString && kb.vals[i] == nil {
			kb.pttls[i] = -2 // it changed again under us: leave it to the next poll
		}
	}
	return kb, nil
}

// readHealth sends INFO server/replication/persistence and CONFIG GET of the
// persistence and eviction settings in one round trip. A refused INFO or CONFIG
// leaves "unknown" values, not an error.
func readHealth(d *deadlineConn) (*health, error) {
	for _, sec := range []string{"server", "replication", "persistence"} {
		d.c.Send("INFO", sec)
	}
	for _, k := range []string{"appendonly", "appendfsync", "maxmemory", "maxmemory-policy"} {
		d.c.Send("CONFIG", "GET", k)
	}
	if err := d.c.Flush(); err != nil {
		return nil, err
	}
	h := &health{appendOnly: "unknown", fsync: "unknown", policy: "unknown", maxmemory: -1}
	var rerr redis.Error
	for range 3 {
		r, err := d.receive()
		if errors.As(err, &rerr) {
			h.infoErr = string(rerr)
			continue
		} else if err != nil {
			return nil, err
		}
		s, _ := redis.String(r, nil)
		parseInfo(s, h)
	}
	for _, dst := range []*string{&h.appendOnly, &h.fsync, nil, &h.policy} {
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
		} else if n, err := strconv.ParseInt(kv[1], 10, 64); err == nil {
			h.maxmemory = n
		}
	}
	return h, nil
}
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func parseTime(r any) (time.Time, error) {
	v, err := redis.Int64s(r, nil)
	if err != nil || len(v) != 2 {
		return time.Time{}, fmt.Errorf("unexpected TIME reply")
	}
	return time.Unix(v[0], v[1]*1000), nil
}

func parseScan(r any) (string, [][]byte, error) {
	v, ok := r.([]any)
	if !ok || len(v) != 2 {
		return "", nil, fmt.Errorf("unexpected SCAN reply %T", r)
	}
	cur, err := redis.String(v[0], nil)
	if err != nil {
		return "", nil, err
	}
	items, ok := v[1].([]any)
	if !ok {
		return "", nil, fmt.Errorf("unexpected SCAN keys %T", v[1])
	}
	keys := make([][]byte, len(items))
	for i, it := range items {
		b, ok := it.([]byte)
		if !ok {
			return "", nil, fmt.Errorf("unexpected SCAN key %T", it)
		}
		keys[i] = b
	}
	return cur, keys, nil
}

// parseInfo reads the fields the doctor needs from an INFO section.
func parseInfo(s string, h *health) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch k {
		case "uptime_in_seconds":
			h.uptimeS, _ = strconv.ParseInt(v, 10, 64)
		case "run_id":
			h.runID = v
		case "role":
			h.role = v
		case "master_host":
			h.masterHost = v
		case "master_port":
			h.masterPort = v
		case "master_replid":
			h.replID = v
		case "aof_enabled":
			if h.appendOnly == "unknown" {
				h.appendOnly = map[string]string{"1": "yes", "0": "no"}[v]
			}
		}
	}
}
