package inspect

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// pollGrace is how long Poll waits past the per-master deadline for replies that are
// already on their way.
const pollGrace = 25 * time.Millisecond

// Poller reads every master concurrently and judges what it read. It keeps history
// across polls (clock samples for rates and jumps, the previous rows for events) and
// never has more than one poll in flight per master. It sends no write command.
type Poller struct {
	cfg    *Config
	pools  []*redis.Pool
	params judgeParams

	mu    sync.Mutex // one Poll at a time
	ms    []*masterState
	polls int
	prev  map[string]prevRow
}

// masterState is what the poller remembers about one master between polls.
type masterState struct {
	busy     atomic.Bool // a read of this master is in flight
	clock    clockHistory
	health   *health
	healthAt time.Time
}

// prevRow is what events are computed against.
type prevRow struct {
	value  string
	state  string
	expiry time.Time // latest projected expiry of the value
}

// health is what INFO and CONFIG GET said about a master.
type health struct {
	infoErr    string // INFO was refused
	uptimeS    int64
	runID      string
	role       string
	masterHost string
	masterPort string
	replID     string
	appendOnly string // "yes", "no" or "unknown"
	fsync      string
	maxmemory  int64 // -1 unknown
	policy     string
}

// keyRead is one key as one master returned it.
type keyRead struct {
	key   string
	value string
	pttl  int64
	typ   string
	batch int32 // index into masterRead.batchAt
}

// masterRead is the raw result of reading one master.
type masterRead struct {
	err      error
	clock    *ClockSample
	timeErr  string
	health   *health
	keys     []keyRead
	batchAt  []time.Time
	capped   bool
	commands int
}

// NewPoller returns a Poller over pools (one per cfg.Masters entry, same order).
func NewPoller(cfg *Config, pools []*redis.Pool) *Poller {
	p := &Poller{cfg: cfg, pools: pools, params: paramsOf(cfg), prev: map[string]prevRow{}}
	for range cfg.Masters {
		p.ms = append(p.ms, &masterState{})
	}
	return p
}

// Poll reads every master and returns the analysed snapshot. It returns within
// inspect.timeout (or ctx's deadline, if sooner) plus a small grace: masters that did
// not answer by then are Up=false with the error. A master whose previous read is
// still stuck is reported down without starting another read.
func (p *Poller) Poll(ctx context.Context) *Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := time.Now()
	deadline := start.Add(p.cfg.Inspect.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	wantHealth := p.polls%max(1, p.cfg.Inspect.HealthEvery) == 0
	p.polls++

	n := len(p.cfg.Masters)
	reads := make([]*masterRead, n)
	results := make([]chan *masterRead, n)
	for i := range n {
		st := p.ms[i]
		if i >= len(p.pools) || p.pools[i] == nil {
			reads[i] = &masterRead{err: errors.New("no connection pool")}
			continue
		}
		if !st.busy.CompareAndSwap(false, true) {
			reads[i] = &masterRead{err: errors.New("previous poll still running (master stuck)")}
			continue
		}
		ch := make(chan *masterRead, 1)
		results[i] = ch
		health := wantHealth || st.health == nil
		go func(pool *redis.Pool) {
			defer st.busy.Store(false)
			ch <- readMaster(pool, p.cfg, deadline, health)
		}(p.pools[i])
	}
	timer := time.NewTimer(time.Until(deadline) + pollGrace)
	defer timer.Stop()
	var late error // set once the deadline passed or ctx ended: take only what is there
	for i, ch := range results {
		if ch == nil {
			continue
		}
		if late == nil {
			select {
			case r := <-ch:
				reads[i] = r
				continue
			case <-timer.C:
				late = fmt.Errorf("no answer within %v", deadline.Sub(start).Round(time.Millisecond))
			case <-ctx.Done():
				late = fmt.Errorf("poll cancelled: %v", ctx.Err())
			}
		}
		select {
		case r := <-ch:
			reads[i] = r
		default:
			reads[i] = &masterRead{err: late}
		}
	}
	return p.build(time.Now(), reads)
}

// build turns raw reads into a snapshot and updates the history.
func (p *Poller) build(now time.Time, reads []*masterRead) *Snapshot {
	cfg := p.cfg
	s := &Snapshot{TakenAt: now, Quorum: cfg.Quorum(), Complete: true, Findings: []Finding{}}
	rates := make([]float64, len(reads))
	for i, r := range reads {
		mc := cfg.Masters[i]
		st := p.ms[i]
		m := Master{Name: mc.Name, Addr: mc.Addr, Up: r.err == nil, Findings: []Finding{}}
		if r.err != nil {
			m.Error = r.err.Error()
			s.Complete = false
		}
		if r.clock != nil {
			st.clock.add(*r.clock)
			m.RTTMs = ms(r.clock.Received.Sub(r.clock.Sent))
		}
		if r.health != nil {
			st.health, st.healthAt = r.health, now
		}
		if cs, ok := st.clock.last(); ok && r.err == nil && r.clock != nil {
			m.ClockOffsetMs = ms(cs.Offset())
			m.ClockUncertaintyMs = ms(cs.Uncertainty())
			if rate, ok := st.clock.rate(); ok {
				rates[i] = rate
				m.ClockRatePPM = &rate
			}
		}
		m.ClockJump = st.clock.jumped(now)
		if h := st.health; h != nil {
			m.UptimeS = h.uptimeS + int64(now.Sub(st.healthAt).Seconds())
			m.Role, m.AppendOnly, m.AppendFsync, m.MaxmemoryPolicy = h.role, h.appendOnly, h.fsync, h.policy
		}
		if r.capped {
			m.Capped = true
			s.Complete = false
		}
		s.Masters = append(s.Masters, m)
	}
	s.Resources = p.merge(now, reads, rates)
	var maxPTTL int64
	for i := range s.Resources {
		for _, n := range s.Resources[i].Nodes {
			maxPTTL = max(maxPTTL, n.PTTLMs)
		}
	}
	for i := range s.Masters {
		s.Masters[i].Findings = append(s.Masters[i].Findings,
			masterFindings(cfg, &s.Masters[i], p.ms[i].health, reads[i], time.Duration(maxPTTL)*time.Millisecond)...)
	}
	s.Findings = append(s.Findings, snapshotFindings(cfg, s.Masters, p.healths())...)
	s.Events = p.events(now, s.Resources)
	summarize(s)
	return s
}

func (p *Poller) healths() []*health {
	hs := make([]*health, len(p.ms))
	for i, st := range p.ms {
		hs[i] = st.health
	}
	return hs
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// merge joins the masters' keys into one row per resource (configured resources
// always included), judges each row and sorts the rows by resource name.
func (p *Poller) merge(now time.Time, reads []*masterRead, rates []float64) []Resource {
	cfg := p.cfg
	n := len(reads)
	total := 0
	for _, r := range reads {
		total += len(r.keys)
	}
	index := make(map[string]int32, total/max(1, n)+len(cfg.Inspect.Resources))
	rows := make([]Resource, 0, total/max(1, n)+len(cfg.Inspect.Resources))
	var batch []int32 // rows×n: which batch each node was read in (-1: not read)
	newRow := func(key string) int32 {
		idx := int32(len(rows))
		nodes := make([]Node, n)
		for i := range nodes {
			nodes[i] = Node{Master: cfg.Masters[i].Name, PTTLMs: -2, Type: TypeNone}
			if reads[i].err != nil {
				nodes[i].Error = "down"
			}
		}
		rows = append(rows, Resource{Resource: cfg.Resource(key), Key: key, Nodes: nodes, Anomalies: []Anomaly{}})
		for range n {
			batch = append(batch, -1)
		}
		index[key] = idx
		return idx
	}
	for _, res := range cfg.Inspect.Resources {
		if _, ok := index[cfg.Key(res)]; !ok {
			newRow(cfg.Key(res))
		}
	}
	fence := map[string]int64{}
	for mi, r := range reads {
		if r.err != nil {
			continue
		}
		for ki := range r.keys {
			kr := &r.keys[ki]
			if kr.pttl == -2 {
				continue // absent, or expired between SCAN and GET: no phantom row
			}
			if base, ok := fenceBase(kr.key); ok && kr.typ == TypeString {
				if c, ok := parseCounter(kr.value); ok {
					fence[base] = max(fence[base], c)
					continue
				}
			}
			idx, ok := index[kr.key]
			if !ok {
				idx = newRow(kr.key)
			}
			nd := &rows[idx].Nodes[mi]
			nd.Value, nd.PTTLMs, nd.Type = kr.value, kr.pttl, kr.typ
			batch[int(idx)*n+mi] = kr.batch
		}
		r.keys = nil // let the raw reads go as soon as they are merged
	}
	at := make([]time.Time, n)
	for ri := range rows {
		for mi := range n {
			at[mi] = now
			if b := batch[ri*n+mi]; b >= 0 {
				at[mi] = reads[mi].batchAt[b]
			}
		}
		judge(&rows[ri], at, rates, now, p.params)
		if rows[ri].Token == 0 {
			rows[ri].Token = fence[rows[ri].Key]
		}
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].Resource < rows[b].Resource })
	return rows
}

// events compares rows with the previous poll's and remembers them for the next.
func (p *Poller) events(now time.Time, rows []Resource) []Event {
	var evs []Event
	seen := make(map[string]prevRow, len(rows))
	for i := range rows {
		r := &rows[i]
		cur := prevRow{value: r.Value, state: r.State, expiry: latestExpiry(r, now)}
		if r.State == StateFree {
			cur.value = ""
		}
		prev := p.prev[r.Resource]
		if e, ok := diffRow(r.Resource, prev, cur, now, p.params.spreadLimit(0)); ok {
			evs = append(evs, e)
		}
		seen[r.Resource] = cur
	}
	for name, prev := range p.prev {
		if _, ok := seen[name]; !ok && prev.value != "" {
			if e, ok := diffRow(name, prev, prevRow{}, now, p.params.spreadLimit(0)); ok {
				evs = append(evs, e)
			}
		}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].Resource < evs[b].Resource })
	p.prev = seen
	return evs
}

// latestExpiry estimates the latest expiry of the row's value from its validity: the
// local instant the last holder lets it go.
func latestExpiry(r *Resource, now time.Time) time.Time {
	if r.Value == "" {
		return time.Time{}
	}
	var best int64
	for _, n := range r.Nodes {
		if n.Value == r.Value && n.PTTLMs > best {
			best = n.PTTLMs
		}
	}
	return now.Add(time.Duration(best) * time.Millisecond)
}

// diffRow returns the event that turns prev into cur, if any. tolerance absorbs
// measurement noise in expiries.
func diffRow(name string, prev, cur prevRow, now time.Time, tolerance time.Duration) (Event, bool) {
	e := Event{At: now, Resource: name, Value: cur.value}
	switch {
	case prev.value == "" && cur.value == "":
		return e, false
	case prev.value == "":
		e.Kind = kindForState(cur.state, "acquired")
		e.Detail = "now " + cur.state
	case cur.value == "":
		e.Value = prev.value
		if !prev.expiry.IsZero() && !now.Before(prev.expiry.Add(-tolerance-time.Second)) {
			e.Kind, e.Detail = "expired", "its TTL ran out"
		} else {
			e.Kind, e.Detail = "released", fmt.Sprintf("deleted %v before its expiry", prev.expiry.Sub(now).Round(time.Millisecond))
		}
	case prev.value != cur.value:
		e.Kind = kindForState(cur.state, "owner-changed")
		e.Detail = "was " + prev.value
	case cur.state != prev.state && (cur.state == StateSplit || cur.state == StatePartial):
		e.Kind, e.Detail = cur.state, "was "+prev.state
	case !prev.expiry.IsZero() && cur.expiry.Sub(prev.expiry) > tolerance+time.Second:
		e.Kind = "extended"
		e.Detail = fmt.Sprintf("expiry moved %v later", cur.expiry.Sub(prev.expiry).Round(time.Millisecond))
	default:
		return e, false
	}
	return e, true
}

func kindForState(state, held string) string {
	switch state {
	case StateSplit, StatePartial:
		return state
	}
	return held
}

// conn wraps a connection with one deadline for every reply.
type deadlineConn struct {
	c        redis.Conn
	deadline time.Time
	sent     int
}

func (d *deadlineConn) send(cmd string, args ...any) error {
	d.sent++
	return d.c.Send(cmd, args...)
}

func (d *deadlineConn) receive() (any, error) {
	left := time.Until(d.deadline)
	if left <= 0 {
		return nil, context.DeadlineExceeded
	}
	return redis.ReceiveWithTimeout(d.c, left)
}

// readMaster reads one master: TIME, health (when asked), then SCAN interleaved with
// batches of MGET + PTTL (one round trip per SCAN page), then TYPE/GET/PTTL for the
// few keys MGET could not read as strings. Every reply is bounded by deadline.
func readMaster(pool *redis.Pool, cfg *Config, deadline time.Time, wantHealth bool) (res *masterRead) {
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
	defer func() { res.commands = d.sent }()
	fail := func(what string, err error) *masterRead {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			err = fmt.Errorf("no answer within the poll deadline")
		}
		res.err = fmt.Errorf("%s: %w", what, err)
		return res
	}

	// TIME alone, so that nothing else inflates the round trip.
	sent := time.Now()
	if err := d.send("TIME"); err != nil {
		return fail("TIME", err)
	}
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
		for _, sec := range []string{"server", "replication", "persistence"} {
			d.send("INFO", sec)
		}
		for _, k := range []string{"appendonly", "appendfsync", "maxmemory", "maxmemory-policy"} {
			d.send("CONFIG", "GET", k)
		}
		if err := c.Flush(); err != nil {
			return fail("INFO", err)
		}
		h := &health{appendOnly: "unknown", fsync: "unknown", policy: "unknown", maxmemory: -1}
		for i := range 3 {
			r, err := d.receive()
			if errors.As(err, &rerr) {
				h.infoErr = string(rerr)
				continue
			} else if err != nil {
				return fail("INFO", err)
			}
			_ = i
			s, _ := redis.String(r, nil)
			parseInfo(s, h)
		}
		for _, dst := range []*string{&h.appendOnly, &h.fsync, nil, &h.policy} {
			r, err := d.receive()
			if errors.As(err, &rerr) {
				continue // refused CONFIG: "unknown"
			} else if err != nil {
				return fail("CONFIG GET", err)
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
		res.health = h
	}

	// Configured resources (and their fence counters) go in the first batch.
	var pending []string
	for _, r := range cfg.Inspect.Resources {
		pending = append(pending, cfg.Key(r), cfg.Key(r)+FenceSuffix)
	}
	patterns := cfg.Inspect.Patterns
	pi, cursor := 0, "0"
	scanning := len(patterns) > 0
	scanned := 0
	maxKeys := cfg.Inspect.MaxKeys
	for scanning || len(pending) > 0 {
		doScan := scanning && scanned < maxKeys
		if doScan {
			d.send("SCAN", cursor, "MATCH", patterns[pi], "COUNT", cfg.Inspect.ScanCount)
		}
		batch := pending
		pending = nil
		if len(batch) > 0 {
			args := make([]any, len(batch))
			for i, k := range batch {
				args[i] = k
			}
			d.send("MGET", args...)
			for _, k := range batch {
				d.send("PTTL", k)
			}
		}
		if !doScan && len(batch) == 0 {
			break
		}
		t0 := time.Now()
		if err := c.Flush(); err != nil {
			return fail("send", err)
		}
		if doScan {
			r, err := d.receive()
			if err != nil {
				return fail("SCAN", err)
			}
			next, keys, err := parseScan(r)
			if err != nil {
				return fail("SCAN", err)
			}
			if scanned+len(keys) > maxKeys {
				keys = keys[:maxKeys-scanned]
			}
			scanned += len(keys)
			pending = keys
			cursor = next
			if cursor == "0" {
				pi++
				if pi >= len(patterns) {
					scanning = false
				}
			}
			if scanning && scanned >= maxKeys {
				scanning = false
				res.capped = true
			}
		}
		if len(batch) > 0 {
			if err := readBatch(d, batch, t0, res); err != nil {
				return fail("MGET/PTTL", err)
			}
		}
	}
	if err := resolveOdd(d, res); err != nil {
		return fail("TYPE/GET", err)
	}
	return res
}

// readBatch receives the MGET and PTTL replies for batch and records the keys.
func readBatch(d *deadlineConn, batch []string, t0 time.Time, res *masterRead) error {
	r, err := d.receive()
	if err != nil {
		return err
	}
	vals, ok := r.([]any)
	if !ok || len(vals) != len(batch) {
		return fmt.Errorf("unexpected MGET reply %T", r)
	}
	bi := int32(len(res.batchAt))
	for i, k := range batch {
		pr, err := d.receive()
		if err != nil {
			return err
		}
		pttl, ok := pr.(int64)
		if !ok {
			return fmt.Errorf("unexpected PTTL reply %T", pr)
		}
		kr := keyRead{key: k, pttl: pttl, batch: bi, typ: TypeString}
		switch v := vals[i].(type) {
		case []byte:
			kr.value = string(v)
		case nil:
			if pttl != -2 {
				kr.typ = "" // exists but MGET saw no string: resolved by TYPE below
			}
		}
		if pttl == -2 {
			kr.typ, kr.value = TypeNone, "" // gone by the time PTTL ran
		}
		res.keys = append(res.keys, kr)
	}
	t1 := time.Now()
	res.batchAt = append(res.batchAt, t0.Add(t1.Sub(t0)/2))
	return nil
}

// resolveOdd reads TYPE (and GET/PTTL again) for keys that exist but that MGET did
// not return as strings: foreign types, or keys created between MGET and PTTL.
func resolveOdd(d *deadlineConn, res *masterRead) error {
	var odd []int
	for i := range res.keys {
		if res.keys[i].typ == "" {
			odd = append(odd, i)
		}
	}
	if len(odd) == 0 {
		return nil
	}
	for _, i := range odd {
		k := res.keys[i].key
		d.send("TYPE", k)
		d.send("GET", k)
		d.send("PTTL", k)
	}
	t0 := time.Now()
	if err := d.c.Flush(); err != nil {
		return err
	}
	bi := int32(len(res.batchAt))
	var rerr redis.Error
	for _, i := range odd {
		kr := &res.keys[i]
		tr, err := d.receive()
		if err != nil {
			return err
		}
		typ, _ := redis.String(tr, nil)
		gr, gerr := d.receive()
		if gerr != nil && !errors.As(gerr, &rerr) {
			return gerr
		}
		pr, err := d.receive()
		if err != nil {
			return err
		}
		pttl, _ := pr.(int64)
		kr.typ, kr.pttl, kr.batch = typ, pttl, bi
		if b, ok := gr.([]byte); ok && typ == TypeString {
			kr.value = string(b)
		}
		if typ == TypeNone || pttl == -2 {
			kr.typ, kr.pttl, kr.value = TypeNone, -2, ""
		}
	}
	t1 := time.Now()
	res.batchAt = append(res.batchAt, t0.Add(t1.Sub(t0)/2))
	return nil
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

func parseScan(r any) (string, []string, error) {
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
	keys := make([]string, len(items))
	for i, it := range items {
		b, ok := it.([]byte)
		if !ok {
			return "", nil, fmt.Errorf("unexpected SCAN key %T", it)
		}
		keys[i] = string(b)
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
