package inspect

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// fillSentinel sets a Sentinel group's row: the master read (resolved and
// ROLE-confirmed), "via sentinel", and the server's state as fill does. A change of
// master restarts the clock history (another server) and is remembered as a failover
// the poller saw.
func fillSentinel(m *Master, st *masterState, r *masterRead, now time.Time, mc config.MasterConfig) float64 {
	m.Via, m.SentinelMasterName = "sentinel", mc.MasterName
	if r.addr != "" && r.addr != st.addr {
		if st.addr != "" {
			st.changedAt = now
		}
		st.addr = r.addr
		st.clock = clockHistory{}
		st.health = nil
	}
	m.Addr = st.addr // the last one known when this poll could not resolve
	if r.sentinel != nil {
		st.sentinel = r.sentinel
	}
	rate := fill(m, st, r, now)
	if h := st.health; h != nil && r.err == nil {
		n := h.replicas
		m.Replicas = &n
	}
	return rate
}

// fillCluster sets a cluster's row from its shards: each shard master is a row of
// m.Shards (filled as a plain master, with its own clock history); the cluster is up
// when every shard master answered; its clock figures are the worst shard's. Rows are
// judged with each key's own shard clock rate, and keys whose shard did not answer
// carry that shard's error.
func fillCluster(m *Master, st *masterState, r *masterRead, now time.Time, col *collector, mi int, mc config.MasterConfig) {
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
		sm := Master{Name: m.Name + " shard " + sh.Master, Addr: sh.Master, Slots: slotRanges(sh.Slots), Replicas: &n, Findings: []Finding{}}
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
func aggregate(m *Master) {
	common := func(get func(*Master) string) string {
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
	m.Role = common(func(s *Master) string { return s.Role })
	m.AppendOnly = common(func(s *Master) string { return s.AppendOnly })
	m.AppendFsync = common(func(s *Master) string { return s.AppendFsync })
	m.MaxmemoryPolicy = common(func(s *Master) string { return s.MaxmemoryPolicy })
	m.Server = common(func(s *Master) string { return s.Server })
	m.Version = common(func(s *Master) string { return s.Version })
}

// clusterFindings lists what is wrong with a cluster: every master finding of each shard
// master (kept on the shard and repeated on the cluster), a cluster state that is not
// ok, slots no shard serves, a shard master without a replica.
func clusterFindings(cfg *config.Config, m *Master, st *masterState, r *masterRead, longest time.Duration) []Finding {
	var fs []Finding
	if r.cluster == nil {
		return masterFindings(cfg, m, nil, r, longest) // not found at all: down
	}
	for si := range m.Shards {
		sh := &m.Shards[si]
		sh.Findings = append(sh.Findings, masterFindings(cfg, sh, st.shards[sh.Addr].health, r.cluster.reads[si], longest)...)
		for _, f := range sh.Findings {
			f.Master = m.Name
			fs = append(fs, f)
		}
	}
	add := func(code, sev, msg, fix string) {
		fs = append(fs, Finding{Code: code, Severity: sev, Master: m.Name, Message: msg, Fix: fix})
	}
	if state := st.cluster["cluster_state"]; state != "" && state != "ok" {
		add(FindingClusterState, SeverityCrit, fmt.Sprintf("%s reports cluster_state:%s: the cluster refuses commands", m.Name, state),
			"bring the failed shard masters back (or fail them over to replicas)")
	}
	uncovered := 0
	for _, o := range r.cluster.owner {
		if o < 0 {
			uncovered++
		}
	}
	if n, err := strconv.Atoi(st.cluster["cluster_slots_ok"]); err == nil && topology.Slots-n > uncovered {
		uncovered = topology.Slots - n
	}
	if uncovered > 0 {
		add(FindingSlotsUncovered, SeverityCrit, fmt.Sprintf("%d of %d slots of %s are not served by a healthy shard master: locks whose keys hash there cannot be taken", uncovered, topology.Slots, m.Name),
			"assign the slots (CLUSTER ADDSLOTS) or recover their shard")
	}
	for _, sh := range m.Shards {
		if sh.Replicas != nil && *sh.Replicas == 0 {
			add(FindingShardNoReplica, SeverityWarn, fmt.Sprintf("%s has no replica: when it fails, its slots (%s) stay down until it returns", sh.Name, sh.Slots),
				"add a replica to every shard (CLUSTER REPLICATE)")
		}
	}
	return fs
}

// sentinelFindings lists what is wrong with a Sentinel group: a master promoted less
// than the longest lock TTL ago (locks the old master granted may be gone), sentinels
// that do not reach their quorum or are fewer than 3, and (information) the master's
// min-replicas-to-write.
func sentinelFindings(cfg *config.Config, m *Master, st *masterState, now time.Time, longest time.Duration) []Finding {
	var fs []Finding
	add := func(code, sev, msg, fix string) {
		fs = append(fs, Finding{Code: code, Severity: sev, Master: m.Name, Message: msg, Fix: fix})
	}
	longest = max(cfg.Inspect.MaxTTL, longest)
	info, h := st.sentinel, st.health
	if m.Up && h != nil {
		promoted := h.secondReplOffset >= 0 || (info != nil && info.configEpoch > 0)
		var ago time.Duration = -1
		switch {
		case !st.changedAt.IsZero() && now.Sub(st.changedAt) < longest:
			ago = now.Sub(st.changedAt)
		case promoted && info != nil && info.promotedMs >= 0 && time.Duration(info.promotedMs)*time.Millisecond < longest:
			ago = time.Duration(info.promotedMs) * time.Millisecond
		case h.secondReplOffset >= 0 && time.Duration(m.UptimeS)*time.Second < longest:
			ago = time.Duration(m.UptimeS) * time.Second
		}
		if ago >= 0 {
			add(FindingFailedOverRecently, SeverityCrit,
				fmt.Sprintf("%s's master %s was promoted %s ago, less than the longest lock TTL %s: locks granted by the old master may be gone (replication is asynchronous)", m.Name, m.Addr, Duration(ago), Duration(longest)),
				"treat locks taken before the failover as lost until max_ttl has passed; run min-replicas-to-write >= 1 on lock masters")
		}
		if h.minReplicas >= 0 {
			add(FindingMinReplicas, SeverityInfo,
				fmt.Sprintf("%s's master acknowledges writes with min-replicas-to-write %d (%d replicas connected): with 0 a lock can be acknowledged before any replica has it", m.Name, h.minReplicas, h.replicas),
				"min-replicas-to-write 1 on the group's nodes makes a failover less likely to lose a lock")
		}
	}
	if info == nil {
		return fs
	}
	if info.answered < info.configured {
		add(FindingSentinelDown, SeverityWarn, fmt.Sprintf("%d of %d sentinels of %s answered (%s)", info.answered, info.configured, m.Name, strings.Join(info.errs, "; ")),
			"check the sentinels that did not answer, and the sentinels list in the config")
	}
	if info.ckquorum != "" {
		add(FindingSentinelQuorum, SeverityWarn, fmt.Sprintf("SENTINEL CKQUORUM on %s failed: %s", m.Name, firstLine(info.ckquorum)),
			"run enough sentinels to reach both the quorum and a majority for failover")
	}
	if n := max(info.configured, info.known); n < 3 {
		add(FindingFewSentinels, SeverityWarn, fmt.Sprintf("%s is watched by %d sentinels: fewer than 3 cannot fail over safely when one is lost", m.Name, n),
			"run at least 3 sentinels on independent hosts")
	}
	return fs
}
