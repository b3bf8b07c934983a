package verdict

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// ClusterFacts is what a cluster's poll learned that its findings judge.
type ClusterFacts struct {
	Info    map[string]string // CLUSTER INFO, last read
	Owner   []int16           // slot -> shard index (-1: not served)
	Health  []*Health         // per shard master (Master.Shards order), last known
	TimeErr []string          // per shard master: why TIME was refused this poll
}

// ClusterFindings lists what is wrong with a cluster: every master finding of each shard
// master (kept on the shard and repeated on the cluster), a cluster state that is not
// ok, slots no shard serves, a shard master without a replica.
func ClusterFindings(cfg *config.Config, m *inspect.Master, cf *ClusterFacts, longest time.Duration) []inspect.Finding {
	var fs []inspect.Finding
	if cf == nil {
		return MasterFindings(cfg, m, nil, "", longest) // not found at all: down
	}
	for si := range m.Shards {
		sh := &m.Shards[si]
		sh.Findings = append(sh.Findings, MasterFindings(cfg, sh, cf.Health[si], cf.TimeErr[si], longest)...)
		for _, f := range sh.Findings {
			f.Master = m.Name
			fs = append(fs, f)
		}
	}
	add := func(code, sev, msg, fix string) {
		fs = append(fs, inspect.Finding{Code: code, Severity: sev, Master: m.Name, Message: msg, Fix: fix})
	}
	if state := cf.Info["cluster_state"]; state != "" && state != "ok" {
		add(inspect.FindingClusterState, inspect.SeverityCrit, fmt.Sprintf("%s reports cluster_state:%s: the cluster refuses commands", m.Name, state),
			"bring the failed shard masters back (or fail them over to replicas)")
	}
	uncovered := 0
	for _, o := range cf.Owner {
		if o < 0 {
			uncovered++
		}
	}
	if n, err := strconv.Atoi(cf.Info["cluster_slots_ok"]); err == nil && topology.Slots-n > uncovered {
		uncovered = topology.Slots - n
	}
	if uncovered > 0 {
		add(inspect.FindingSlotsUncovered, inspect.SeverityCrit, fmt.Sprintf("%d of %d slots of %s are not served by a healthy shard master: locks whose keys hash there cannot be taken", uncovered, topology.Slots, m.Name),
			"assign the slots (CLUSTER ADDSLOTS) or recover their shard")
	}
	for _, sh := range m.Shards {
		if sh.Replicas != nil && *sh.Replicas == 0 {
			add(inspect.FindingShardNoReplica, inspect.SeverityWarn, fmt.Sprintf("%s has no replica: when it fails, its slots (%s) stay down until it returns", sh.Name, sh.Slots),
				"add a replica to every shard (CLUSTER REPLICATE)")
		}
	}
	return fs
}

// SentinelFindings lists what is wrong with a Sentinel group: a master promoted less
// than the longest lock TTL ago (locks the old master granted may be gone), sentinels
// that do not reach their quorum or are fewer than 3, and (information) the master's
// min-replicas-to-write.
// info is what the sentinels said last, h the master's last known health, changedAt
// when the poller saw the group's master change (zero if never).
func SentinelFindings(cfg *config.Config, m *inspect.Master, info *SentinelInfo, h *Health, changedAt, now time.Time, longest time.Duration) []inspect.Finding {
	var fs []inspect.Finding
	add := func(code, sev, msg, fix string) {
		fs = append(fs, inspect.Finding{Code: code, Severity: sev, Master: m.Name, Message: msg, Fix: fix})
	}
	longest = max(cfg.Inspect.MaxTTL, longest)
	if m.Up && h != nil {
		promoted := h.SecondReplOffset >= 0 || (info != nil && info.ConfigEpoch > 0)
		var ago time.Duration = -1
		switch {
		case !changedAt.IsZero() && now.Sub(changedAt) < longest:
			ago = now.Sub(changedAt)
		case promoted && info != nil && info.PromotedMs >= 0 && time.Duration(info.PromotedMs)*time.Millisecond < longest:
			ago = time.Duration(info.PromotedMs) * time.Millisecond
		case h.SecondReplOffset >= 0 && time.Duration(m.UptimeS)*time.Second < longest:
			ago = time.Duration(m.UptimeS) * time.Second
		}
		if ago >= 0 {
			add(inspect.FindingFailedOverRecently, inspect.SeverityCrit,
				fmt.Sprintf("%s's master %s was promoted %s ago, less than the longest lock TTL %s: locks granted by the old master may be gone (replication is asynchronous)", m.Name, m.Addr, inspect.Duration(ago), inspect.Duration(longest)),
				"treat locks taken before the failover as lost until max_ttl has passed; run min-replicas-to-write >= 1 on lock masters")
		}
		if h.MinReplicas >= 0 {
			add(inspect.FindingMinReplicas, inspect.SeverityInfo,
				fmt.Sprintf("%s's master acknowledges writes with min-replicas-to-write %d (%d replicas connected): with 0 a lock can be acknowledged before any replica has it", m.Name, h.MinReplicas, h.Replicas),
				"min-replicas-to-write 1 on the group's nodes makes a failover less likely to lose a lock")
		}
	}
	if info == nil {
		return fs
	}
	if info.Answered < info.Configured {
		add(inspect.FindingSentinelDown, inspect.SeverityWarn, fmt.Sprintf("%d of %d sentinels of %s answered (%s)", info.Answered, info.Configured, m.Name, strings.Join(info.Errs, "; ")),
			"check the sentinels that did not answer, and the sentinels list in the config")
	}
	if info.Ckquorum != "" {
		add(inspect.FindingSentinelQuorum, inspect.SeverityWarn, fmt.Sprintf("SENTINEL CKQUORUM on %s failed: %s", m.Name, firstLine(info.Ckquorum)),
			"run enough sentinels to reach both the quorum and a majority for failover")
	}
	if n := max(info.Configured, info.Known); n < 3 {
		add(inspect.FindingFewSentinels, inspect.SeverityWarn, fmt.Sprintf("%s is watched by %d sentinels: fewer than 3 cannot fail over safely when one is lost", m.Name, n),
			"run at least 3 sentinels on independent hosts")
	}
	return fs
}

// SentinelInfo is what the sentinels said about a group (SENTINEL MASTER and
// SENTINEL CKQUORUM on each).
type SentinelInfo struct {
	Configured  int    // sentinels in the config
	Answered    int    // sentinels that know the group
	Known       int    // sentinels the best-informed one knows, itself included
	Ckquorum    string // "" when every answering sentinel said OK, else the first refusal
	ConfigEpoch int64
	PromotedMs  int64 // the longest role-reported-time among the sentinels (-1 unknown)
	Errs        []string
}
