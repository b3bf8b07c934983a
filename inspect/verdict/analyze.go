package verdict

import (
	"fmt"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/config"
)

// Params are the settings a resource verdict depends on.
type Params struct {
	quorum      int
	driftFactor float64
	// spreadLimit is the largest expected difference between the holders' projected
	// expiries: 2×node_timeout plus the drift allowance of the lock's TTL.
	nodeTimeout time.Duration
	scopes      []scopeRule // [[inspect.scopes]], first match wins
}

// scopeRule is one [[inspect.scopes]] entry, parsed.
type scopeRule struct {
	q     inspect.Query
	scope string
}

// ParamsOf reads the verdict settings of c.
func ParamsOf(c *config.Config) Params {
	p := Params{quorum: c.Quorum(), driftFactor: c.Lock.DriftFactor, nodeTimeout: c.Lock.NodeTimeout}
	for _, s := range c.Inspect.Scopes {
		q, err := inspect.ParseQuery(s.Pattern)
		if err != nil { // config.Load checked it; a Config built otherwise matches nothing here
			continue
		}
		p.scopes = append(p.scopes, scopeRule{q, s.Scope})
	}
	return p
}

// scopeOf decides how a row is judged: the first [[inspect.scopes]] rule that matches
// it, else the scope its library declares (locks.ScopeOf; a library that can do both
// decides by how many masters hold the value, locks.PerKeyScope), else the fleet's
// default, redlock. label is the library of the row's holding value ("" for none),
// declared the scope it declares (locks.ScopeOf of label, as Identify answers it),
// holders how many masters hold that value.
func (p Params) scopeOf(r *inspect.Resource, label, declared string, holders int) string {
	for _, s := range p.scopes {
		if s.q.Match(inspect.QueryFields{Resource: r.Resource, Owner: r.Owner, Value: r.Value, Library: label}) {
			return s.scope
		}
	}
	switch s := declared; s {
	case locks.ScopePerKey:
		return locks.PerKeyScope(holders)
	case "":
		return locks.ScopeRedlock
	default:
		return s
	}
}

func (p Params) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*p.driftFactor) + 2*time.Millisecond
}

// SpreadLimit is the largest expected difference between the holders' projected
// expiries of a lock of ttl: 2×node_timeout plus the drift allowance.
func (p Params) SpreadLimit(ttl time.Duration) time.Duration {
	return 2*p.nodeTimeout + p.drift(ttl)
}

// projectExpiry maps a PTTL read at local instant at onto the local clock, corrected
// for a master clock that runs ratePPM fast (it spends the TTL that much sooner).
func projectExpiry(at time.Time, pttlMs int64, ratePPM float64) time.Time {
	d := float64(pttlMs) * float64(time.Millisecond) / (1 + ratePPM/1e6)
	return at.Add(time.Duration(d))
}

// JudgeWith fills r's verdict fields (state, value, owner, token, holders, uncertain,
// validity, spread, anomalies) from r.Nodes. at[i] is the local instant node i was
// read, ratePPM[i] that master's clock rate (0 when unknown), now the snapshot instant.
// A node with a non-empty Error is a master that did not answer.
func JudgeWith(r *inspect.Resource, at []time.Time, ratePPM []float64, now time.Time, p Params) {
	if bookkept(r) {
		return
	}
	type group struct {
		value   string
		count   int
		withTTL int
	}
	var groupBuf [8]group
	groups := groupBuf[:0] // few values per key: a slice on the stack beats a map
	down, foreign, noTTL := 0, 0, 0
	for i := range r.Nodes {
		n := &r.Nodes[i]
		switch {
		case n.Error != "":
			down++
			continue
		case n.Seen().NotALock():
			foreign++
			continue
		case n.PTTLMs == -2 || n.Type == inspect.TypeNone:
			continue
		}
		if n.PTTLMs == -1 && !n.Leased() {
			noTTL++
		}
		found := false
		for g := range groups {
			if groups[g].value == n.Value {
				groups[g].count++
				if n.PTTLMs >= 0 {
					groups[g].withTTL++
				}
				n.Value = groups[g].value // share one copy of the string
				found = true
				break
			}
		}
		if !found {
			g := group{value: n.Value, count: 1}
			if n.PTTLMs >= 0 {
				g.withTTL = 1
			}
			groups = append(groups, g)
		}
	}
	best := -1
	for g := range groups {
		if best < 0 || better(groups[g].withTTL, groups[g].count, groups[g].value, groups[best].withTTL, groups[best].count, groups[best].value) {
			best = g
		}
	}
	r.Value, r.Owner, r.Token, r.Holders, r.Count = "", "", 0, 0, 0
	r.ValidityMs, r.TTLSpreadMs, r.Uncertain = 0, 0, false
	r.Anomalies = r.Anomalies[:0]
	maxCount := 0
	if best >= 0 {
		r.Value, r.Holders, maxCount = groups[best].value, groups[best].count, groups[best].count
	}
	id := r.Identity(now) // what the key is: asked once, for the owner, the scope and the library
	if id.Label == locks.Redlockctl {
		r.Owner, r.Token = id.Owner, id.Token // this project's own value: <owner>#<hex>[#<token>]
	}
	r.Scope, r.Instances, r.Permits, r.PermitLimit, r.AvailablePermits = locks.ScopeRedlock, nil, 0, 0, nil
	if best >= 0 {
		r.Scope = p.scopeOf(r, id.Label, id.Scope, groups[best].count)
	} else if len(p.scopes) > 0 {
		r.Scope = p.scopeOf(r, "", "", 0)
	}
	if r.Scope == locks.ScopeSingle {
		judgeSingle(r, at, ratePPM, now, id, best >= 0 && groups[best].withTTL > 0, foreign > 0, noTTL > 0)
		return
	}
	held := best >= 0 && groups[best].withTTL >= p.quorum
	sem := best >= 0 && semaphoreOf(r) != nil
	switch {
	case sem:
		r.State = inspect.StateSemaphore
	case held:
		r.State = inspect.StateHeld
	case foreign > 0:
		r.State = inspect.StateForeign
	case noTTL > 0:
		r.State = inspect.StateNoTTL
	case len(groups) >= 2:
		r.State = inspect.StateSplit
	case len(groups) == 1:
		r.State = inspect.StatePartial
	default:
		r.State = inspect.StateFree
	}
	// Could the masters that did not answer change the verdict? A held row cannot be
	// un-held by a minority; anything else could reach quorum with their help.
	r.Uncertain = down > 0 && !held && !sem && maxCount+down >= p.quorum

	// Expiries of the holding value, projected onto the local clock (ns since now,
	// on the stack for up to 16 masters).
	var expBuf [16]int64
	exps := expBuf[:0]
	var maxTTL int64
	for i := range r.Nodes {
		n := &r.Nodes[i]
		if best < 0 || n.Error != "" || !n.Holds() || n.PTTLMs < 0 || n.Value != r.Value {
			continue
		}
		rate := 0.0
		if i < len(ratePPM) {
			rate = ratePPM[i]
		}
		exps = append(exps, int64(projectExpiry(at[i], n.PTTLMs, rate).Sub(now)))
		maxTTL = max(maxTTL, n.PTTLMs)
	}
	ttl := time.Duration(maxTTL) * time.Millisecond
	if len(exps) > 0 {
		for i := 1; i < len(exps); i++ { // insertion sort, latest first
			for j := i; j > 0 && exps[j] > exps[j-1]; j-- {
				exps[j], exps[j-1] = exps[j-1], exps[j]
			}
		}
		spread := time.Duration(exps[0] - exps[len(exps)-1])
		r.TTLSpreadMs = spread.Milliseconds()
		if len(exps) > 1 && spread > p.SpreadLimit(ttl) {
			r.Anomalies = append(r.Anomalies, inspect.Anomaly{Code: inspect.AnomalyTTLSpread,
				Message: fmt.Sprintf("holders' expiries differ by %v (expected under %v): a clock ran fast or jumped, or an extension reached only some masters",
					spread.Round(time.Millisecond), p.SpreadLimit(ttl).Round(time.Millisecond))})
		}
		if held && len(exps) >= p.quorum {
			v := time.Duration(exps[p.quorum-1]) - p.drift(ttl)
			r.ValidityMs = max(0, v.Milliseconds())
		}
	}
	for i := range r.Nodes {
		n := &r.Nodes[i]
		switch {
		case n.Error != "":
		case n.Seen().NotALock():
			msg := fmt.Sprintf("%s holds the key as a %s, not a lock string", n.Master, n.Type)
			if n.Lock != nil && n.Lock.Foreign != "" {
				msg += ": " + n.Lock.Foreign
			}
			r.Anomalies = append(r.Anomalies, inspect.Anomaly{Code: inspect.AnomalyWrongType, Master: n.Master, Message: msg})
		case n.PTTLMs == -1 && n.Holds() && !n.Leased():
			r.Anomalies = append(r.Anomalies, inspect.Anomaly{Code: inspect.AnomalyNoTTL, Master: n.Master,
				Message: n.Master + " holds a value without expiry: it will never release itself"})
		}
		if held && !sem && n.Error == "" && n.Holds() && n.PTTLMs != -2 && n.Value != r.Value {
			r.Anomalies = append(r.Anomalies, inspect.Anomaly{Code: inspect.AnomalyStray, Master: n.Master,
				Message: n.Master + " holds a different value than the quorum"})
		}
	}
	recognise(r, id)
	if sem {
		setPermits(r)
	}
}

// judgeSingle judges r as a single-instance lock: each master's lock is its own, so
// the row is held when the holding value has a TTL on its master (no-ttl without),
// never partial or split; its validity is that master's PTTL, projected onto the local
// clock. Instances lists the masters holding a lock at the key. A master's key that is
// not a lock, or has no expiry, is still an anomaly.
func judgeSingle(r *inspect.Resource, at []time.Time, ratePPM []float64, now time.Time, id locks.Identity, withTTL, foreign, noTTL bool) {
	switch {
	case withTTL:
		r.State = inspect.StateHeld
	case noTTL:
		r.State = inspect.StateNoTTL
	case foreign:
		r.State = inspect.StateForeign
	default:
		r.State = inspect.StateFree
	}
	for i := range r.Nodes {
		n := &r.Nodes[i]
		switch {
		case n.Error != "":
			continue
		case n.Seen().NotALock():
			msg := fmt.Sprintf("%s holds the key as a %s, not a lock string", n.Master, n.Type)
			if n.Lock != nil && n.Lock.Foreign != "" {
				msg += ": " + n.Lock.Foreign
			}
			r.Anomalies = append(r.Anomalies, inspect.Anomaly{Code: inspect.AnomalyWrongType, Master: n.Master, Message: msg})
			continue
		case !n.Holds() || n.PTTLMs == -2:
			continue
		}
		r.Instances = append(r.Instances, n.Master)
		if n.PTTLMs == -1 && !n.Leased() {
			r.Anomalies = append(r.Anomalies, inspect.Anomaly{Code: inspect.AnomalyNoTTL, Master: n.Master,
				Message: n.Master + " holds a value without expiry: it will never release itself"})
		}
		if n.Value != r.Value || n.PTTLMs < 0 {
			continue
		}
		rate := 0.0
		if i < len(ratePPM) {
			rate = ratePPM[i]
		}
		v := projectExpiry(at[i], n.PTTLMs, rate).Sub(now).Milliseconds()
		if r.ValidityMs == 0 || v < r.ValidityMs {
			r.ValidityMs = max(0, v)
		}
	}
	recognise(r, id)
	if sem := semaphoreOf(r); sem != nil {
		r.State = inspect.StateSemaphore
	}
	setPermits(r)
}

// semaphoreOf returns the decoded semaphore holding r's value, or nil when the row's
// lock is no semaphore.
func semaphoreOf(r *inspect.Resource) *locks.Lock {
	for i := range r.Nodes {
		n := &r.Nodes[i]
		if n.Error == "" && n.Lock != nil && n.Lock.Semaphore() && n.Value == r.Value && r.Value != "" {
			return n.Lock
		}
	}
	return nil
}

// setPermits fills a semaphore row's permits from its decoded lock.
func setPermits(r *inspect.Resource) {
	if l := semaphoreOf(r); l != nil && r.State == inspect.StateSemaphore {
		r.Permits, r.PermitLimit, r.AvailablePermits = l.Permits, l.Limit, l.Available
	}
}

// bookkept judges r as a library's bookkeeping key when every master that answered
// and holds the key holds it as that library writes it (locks.BookkeepingOf), and at
// least one does: state bookkeeping, its library and role, no value, no anomaly.
func bookkept(r *inspect.Resource) bool {
	var b locks.Bookkeeping
	seen := false
	for i := range r.Nodes {
		n := &r.Nodes[i]
		if n.Error != "" || n.PTTLMs == -2 || n.Type == inspect.TypeNone || n.Type == "" {
			continue
		}
		nb, ok := locks.BookkeepingOf(r.Key, n.Type, n.Value)
		if !ok {
			return false
		}
		b, seen = nb, true
	}
	if !seen {
		return false
	}
	r.State, r.Library, r.Kind, r.LibraryEvidence = inspect.StateBookkeeping, b.Library, "bookkeeping", "bookkeeping key, no lock: "+b.Role
	r.Value, r.Owner, r.Token, r.Holders, r.Count = "", "", 0, 0, 0
	r.ValidityMs, r.TTLSpreadMs, r.Uncertain = 0, 0, false
	r.Anomalies = r.Anomalies[:0]
	r.Scope, r.Instances, r.Permits, r.PermitLimit, r.AvailablePermits = locks.ScopeRedlock, nil, 0, 0, nil
	return true
}

// better orders candidate values: more copies with a TTL, then more copies, then the
// smaller value (so the choice is deterministic).
func better(ttlA, countA int, valA string, ttlB, countB int, valB string) bool {
	if ttlA != ttlB {
		return ttlA > ttlB
	}
	if countA != countB {
		return countA > countB
	}
	return valA < valB
}

// Judge sets r's state, holders, owner, token, validity, spread and anomalies from its
// nodes, exactly as a poll does: at[i] is when node i was read, ratePPM[i] its master's
// measured clock rate (0 when unknown), now the instant validity is counted from.
func Judge(r *inspect.Resource, at []time.Time, ratePPM []float64, now time.Time, cfg *config.Config) {
	JudgeWith(r, at, ratePPM, now, ParamsOf(cfg))
}
