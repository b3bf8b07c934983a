package poll

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/verdict"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// fillSentinel sets a Sentinel group's row: the master read (resolved and
// ROLE-confirmed), "via sentinel", and the server's state as fill does. A change of
// master restarts the clock history (another server) and is remembered as a failover
// the poller saw.
func fillSentinel(m *inspect.Master, st *masterState, r *masterRead, now time.Time, mc config.MasterConfig) float64 {
	m.Via, m.SentinelMasterName = "sentinel", mc.MasterName
	if r.addr != "" && r.addr != st.addr {
		if st.addr != "" {
			st.changedAt = now
		}
		st.addr = r.addr
		st.clock = verdict.ClockHistory{}
		st.health = nil
	}
	m.Addr = st.addr // the last one known when this poll could not resolve
	if r.sentinel != nil {
		st.sentinel = r.sentinel
	}
	rate := fill(m, st, r, now)
	if h := st.health; h != nil && r.err == nil {
		n := h.Replicas
		m.Replicas = &n
	}
	return rate
}

// fillCluster sets a cluster's row from its shards: each shard master is a row of
// m.Shards (filled as a plain master, with its own clock history); the cluster is up
// when every shard master answered; its clock figures are the worst shard's. Rows are
// judged with each key's own shard clock rate, and keys whose shard did not answer
// carry that shard's error.
func fillCluster(m *inspect.Master, st *masterState, r *masterRead, now time.Time, col *collector, mi int, mc config.MasterConfig) {
	m.Via = "cluster"
	m.Addr = strings.Join(mc.Cluster, ",")
	m.Up = r.err == nil
	if r.err != nil {
		m.Error, m.ErrorKind = r.err.Error(), errkind.Of(r.err)
	}
	if r.cluster != nil {
		st.cluster = r.cluster.info
	}
	cr := r.cluster
	if cr == nil {
		return
	}
	rates := make([]float64, len(cr.shards))
	seen := map[string]bool{}
	var down []string
	for si, sh := range cr.shards {
		hs := st.shards[sh.Master]
		if hs == nil {
			hs = &masterState{}
			st.shards[sh.Master] = hs
		}
		seen[sh.Master] = true
		n := len(sh.Replicas)
		sm := inspect.Master{Name: m.Name + " shard " + sh.Master, Addr: sh.Master, Slots: slotRanges(sh.Slots), Replicas: &n, Findings: []inspect.Finding{}}
		rates[si] = fill(&sm, hs, cr.reads[si], now)
		if !sm.Up {
			down = append(down, sh.Master+": "+sm.Error)
		}
		m.Shards = append(m.Shards, sm)
	}
	for addr := range st.shards {
		if !seen[addr] {
			delete(st.shards, addr)
		}
	}
	if len(down) > 0 && r.err == nil {
		m.Up = false
		m.Error = fmt.Sprintf("%d of %d shard masters did not answer: %s", len(down), len(cr.shards), strings.Join(down, "; "))
	}
	aggregate(m)
	m.Capped, m.Incomplete = r.capped, r.incomplete
	keyDown := func(key string) string {
		si := cr.owner[topology.Slot(key)]
		if si < 0 {
			return fmt.Sprintf("slot %d is served by no shard", topology.Slot(key))
		}
		if e := cr.reads[si].err; e != nil {
			return "shard " + cr.shards[si].Master + ": " + e.Error()
		}
		return ""
	}
	col.setCluster(mi, rates, keyDown)
}

// aggregate sets a cluster's clock and server fields from its shards: the largest RTT,
// the offset and rate furthest from zero, any jump, the shortest uptime; a setting
// shared by every shard, or "mixed".
func aggregate(m *inspect.Master) {
	common := func(get func(*inspect.Master) string) string {
		v := ""
		for i := range m.Shards {
			s := get(&m.Shards[i])
			if s == "" {
				continue
			}
			if v != "" && v != s {
				return "mixed"
			}
			v = s
		}
		return v
	}
	first := true
	for i := range m.Shards {
		sh := &m.Shards[i]
		if !sh.Up {
			continue
		}
		m.RTTMs = max(m.RTTMs, sh.RTTMs)
		if math.Abs(sh.ClockOffsetMs) >= math.Abs(m.ClockOffsetMs) {
			m.ClockOffsetMs, m.ClockUncertaintyMs = sh.ClockOffsetMs, sh.ClockUncertaintyMs
		}
		if sh.ClockRatePPM != nil && (m.ClockRatePPM == nil || math.Abs(*sh.ClockRatePPM) > math.Abs(*m.ClockRatePPM)) {
			r := *sh.ClockRatePPM
			m.ClockRatePPM = &r
		}
		m.ClockJump = m.ClockJump || sh.ClockJump
		if sh.UptimeS > 0 && (first || sh.UptimeS < m.UptimeS) {
			m.UptimeS, first = sh.UptimeS, false
		}
	}
	m.Role = common(func(s *inspect.Master) string { return s.Role })
	m.AppendOnly = common(func(s *inspect.Master) string { return s.AppendOnly })
	m.AppendFsync = common(func(s *inspect.Master) string { return s.AppendFsync })
	m.MaxmemoryPolicy = common(func(s *inspect.Master) string { return s.MaxmemoryPolicy })
	m.Server = common(func(s *inspect.Master) string { return s.Server })
	m.Version = common(func(s *inspect.Master) string { return s.Version })
}

// clusterFactsOf gathers what clusterFindings judges of cluster entry m: nil when the
// cluster was not found at all.
func clusterFactsOf(st *masterState, r *masterRead, m *inspect.Master) *verdict.ClusterFacts {
	if r.cluster == nil {
		return nil
	}
	cf := &verdict.ClusterFacts{Info: st.cluster, Owner: r.cluster.owner}
	for si := range m.Shards {
		cf.Health = append(cf.Health, st.shards[m.Shards[si].Addr].health)
		cf.TimeErr = append(cf.TimeErr, r.cluster.reads[si].timeErr)
	}
	return cf
}
