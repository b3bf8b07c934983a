package inspect

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// Thresholds for clock and latency findings.
const (
	offsetWarn   = time.Second // a master's wall clock this far off points at broken NTP
	rateWarnPPM  = 500.0       // a clock this fast or slow is worth a look
	rttWarnRatio = 0.5         // RTT above this share of node_timeout
)

// masterCheck is one doctor check of one master. It returns the finding's severity,
// message and fix, or ok false when the master passes.
type masterCheck struct {
	code  string
	judge func(c *masterCtx) (sev, msg, fix string, ok bool)
}

// masterCtx is what a master check looks at: h is the last known health (nil if never
// read), r this poll's raw read (nil if none), longest the longest lock TTL configured or
// seen in this snapshot.
type masterCtx struct {
	cfg     *config.Config
	m       *Master
	h       *health
	timeErr string // why TIME was refused this poll ("" when it answered)
	longest time.Duration
}

// masterChecks are the checks of a master that answered, in the order their findings
// are listed. A master that did not answer gets the FindingDown finding only.
var masterChecks = []masterCheck{
	{FindingNoTime, func(c *masterCtx) (string, string, string, bool) {
		if c.timeErr == "" {
			return "", "", "", false
		}
		return SeverityWarn, c.m.Name + " refused TIME (" + firstLine(c.timeErr) + "): its clock cannot be checked",
			"allow TIME for the inspector's user (ACL: +time)", true
	}},
	{FindingScanCapped, func(c *masterCtx) (string, string, string, bool) {
		return SeverityWarn, fmt.Sprintf("%s has more keys matching the patterns than max_keys (%d): the dump is partial", c.m.Name, c.cfg.Inspect.MaxKeys),
			"narrow inspect.patterns to the lock keys or raise inspect.max_keys", c.m.Capped
	}},
	{FindingNoInfo, func(c *masterCtx) (string, string, string, bool) {
		return SeverityWarn, c.m.Name + " refused INFO (" + firstLine(c.h.infoErr) + "): role, uptime and persistence cannot be checked",
			"allow INFO for the inspector's user (ACL: +info)", c.h.infoErr != "" && c.h.role == ""
	}},
	{FindingNotMaster, func(c *masterCtx) (string, string, string, bool) {
		return SeverityCrit, fmt.Sprintf("%s has role %s, not master: Redlock needs independent masters", c.m.Name, c.h.role),
			"run REPLICAOF NO ONE on it, or configure the real master instead of the replica", c.h.role != "" && c.h.role != "master"
	}},
	{FindingRestartedRecently, func(c *masterCtx) (string, string, string, bool) {
		up := time.Duration(c.m.UptimeS) * time.Second
		fix := "keep a restarted master out for max TTL before it rejoins, or run it with appendonly yes + appendfsync always"
		if c.cfg.Lock.RestartGuard != 0 {
			fix = fmt.Sprintf("acquisitions leave it out of quorums for another %s (lock.restart_guard); or run it with appendonly yes + appendfsync always", Duration(c.longest-up))
		}
		return SeverityCrit,
			fmt.Sprintf("%s restarted %s ago, less than the longest lock TTL %s, without appendfsync always: it may have forgotten locks that are still valid", c.m.Name, Uptime(c.m.UptimeS), Duration(c.longest)),
			fix, c.h.role != "" && up < c.longest && !c.h.durable()
	}},
	{FindingEvictingPolicy, func(c *masterCtx) (string, string, string, bool) {
		h := c.h
		return SeverityCrit,
			fmt.Sprintf("%s has maxmemory %d with maxmemory-policy %s: it can evict lock keys before they expire", c.m.Name, h.maxmemory, h.policy),
			"set maxmemory-policy noeviction (or maxmemory 0) on lock masters",
			h.role != "" && h.maxmemory > 0 && (strings.HasPrefix(h.policy, "allkeys-") || strings.HasPrefix(h.policy, "volatile-"))
	}},
	{FindingFenceNotDurable, func(c *masterCtx) (string, string, string, bool) {
		return SeverityWarn,
			fmt.Sprintf("fencing is on but %s runs appendonly %s, appendfsync %s: a restart can lose fence counters", c.m.Name, c.h.appendOnly, c.h.fsync),
			"run lock masters with appendonly yes and appendfsync always", c.h.role != "" && c.cfg.Lock.Fencing && !c.h.durable()
	}},
	{FindingClockJump, func(c *masterCtx) (string, string, string, bool) {
		return SeverityCrit, c.m.Name + "'s clock jumped in the last minute: locks on it may expire early or late",
			"fix time sync on the host (slew, never step: chrony makestep off)", c.m.ClockJump
	}},
	{FindingClockOffset, func(c *masterCtx) (string, string, string, bool) {
		return SeverityWarn, fmt.Sprintf("%s's clock is %+.0fms (±%.1fms) off this host's", c.m.Name, c.m.ClockOffsetMs, c.m.ClockUncertaintyMs),
			"check NTP on both hosts", math.Abs(c.m.ClockOffsetMs) > float64(offsetWarn.Milliseconds())
	}},
	{FindingClockRate, func(c *masterCtx) (string, string, string, bool) {
		if c.m.ClockRatePPM == nil {
			return "", "", "", false
		}
		rate, limit := *c.m.ClockRatePPM, c.cfg.Lock.DriftFactor*1e6
		switch {
		case math.Abs(rate) > limit && limit > 0:
			return SeverityCrit, fmt.Sprintf("%s's clock runs %+.0f ppm (%.2f%%), beyond the drift allowance of %.2f%%: locks expire before their holders expect", c.m.Name, rate, rate/1e4, c.cfg.Lock.DriftFactor*100),
				"fix the host's clock source, or raise lock.drift_factor above the measured rate", true
		case math.Abs(rate) > rateWarnPPM:
			return SeverityWarn, fmt.Sprintf("%s's clock runs %+.0f ppm against this host's", c.m.Name, rate),
				"check time sync on both hosts", true
		}
		return "", "", "", false
	}},
	{FindingRTTHigh, func(c *masterCtx) (string, string, string, bool) {
		return SeverityWarn, fmt.Sprintf("%s's round trip %.1fms is close to lock.node_timeout %v: acquisitions will time out on it", c.m.Name, c.m.RTTMs, c.cfg.Lock.NodeTimeout),
			"raise lock.node_timeout or move the master closer", c.m.RTTMs > 0 && c.m.RTTMs > rttWarnRatio*float64(c.cfg.Lock.NodeTimeout.Microseconds())/1000
	}},
}

// durable reports whether the master keeps every acknowledged write across a restart.
func (h *health) durable() bool { return h.appendOnly == "yes" && h.fsync == "always" }

// masterFindings lists what is wrong with one master's setup or clock: the checks of
// masterChecks in order, or FindingDown alone when it did not answer. h is the last
// known health (nil if never read), timeErr why this poll's TIME was refused, maxPTTL the longest lock
// TTL seen in this snapshot.
func masterFindings(cfg *config.Config, m *Master, h *health, timeErr string, maxPTTL time.Duration) []Finding {
	if !m.Up {
		fix := "check that the server runs and is reachable; locks need a quorum of masters up"
		if m.ErrorKind != errkind.None {
			fix = m.ErrorKind.Hint() + "; locks need a quorum of masters up"
		}
		return []Finding{{Code: FindingDown, Severity: SeverityCrit, Master: m.Name,
			Message: fmt.Sprintf("%s (%s) did not answer (%s): %s", m.Name, m.Addr, m.ErrorKind, m.Error), Fix: fix}}
	}
	if h == nil {
		h = &health{} // never read: the checks of health find nothing
	}
	c := &masterCtx{cfg: cfg, m: m, h: h, timeErr: timeErr, longest: max(cfg.Inspect.MaxTTL, maxPTTL)}
	var fs []Finding
	for _, ch := range masterChecks {
		if sev, msg, fix, ok := ch.judge(c); ok {
			fs = append(fs, Finding{Code: ch.code, Severity: sev, Master: m.Name, Message: msg, Fix: fix})
		}
	}
	return fs
}

// snapshotFindings lists what is wrong with the set of masters as a whole: an even
// count, the same server configured twice, one master replicating another.
func snapshotFindings(cfg *config.Config, masters []Master, hs []*health) []Finding {
	var fs []Finding
	if n := len(masters); n%2 == 0 {
		fs = append(fs, Finding{Code: FindingEvenMasters, Severity: SeverityWarn,
			Message: fmt.Sprintf("%d masters: quorum %d tolerates no more failures than %d masters would", n, n/2+1, n-1),
			Fix:     "use an odd number of masters (3 or 5)"})
	}
	for _, m := range cfg.Masters {
		if m.PasswordLiteral {
			fs = append(fs, Finding{Code: FindingLiteralPassword, Severity: SeverityWarn, Master: m.Name,
				Message: fmt.Sprintf("%s's password is written in %s", m.Name, cfg.Path),
				Fix:     "move it to password_env or password_file and rotate it"})
		}
	}
	up := 0
	for _, m := range masters {
		if m.Up {
			up++
		}
	}
	if up < len(masters)/2+1 {
		fs = append(fs, Finding{Code: FindingNoQuorum, Severity: SeverityCrit,
			Message: fmt.Sprintf("only %d of %d masters answered: no lock can be acquired or proven held", up, len(masters)),
			Fix:     "bring masters back up"})
	}
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			a, b := hs[i], hs[j]
			if a == nil || b == nil {
				continue
			}
			if a.runID != "" && a.runID == b.runID {
				fs = append(fs, Finding{Code: FindingDuplicateServer, Severity: SeverityCrit,
					Message: fmt.Sprintf("%s and %s are the same Redis server (run_id %s)", masters[i].Name, masters[j].Name, a.runID),
					Fix:     "configure N distinct masters: one server counted twice breaks the quorum"})
				continue
			}
			for _, pair := range [][2]int{{i, j}, {j, i}} {
				r, m := pair[0], pair[1]
				hr, hm := hs[r], hs[m]
				if hr.role != "slave" && hr.role != "replica" {
					continue
				}
				sameAddr := hr.masterHost != "" && sameHostPort(hr.masterHost+":"+hr.masterPort, cfg.Masters[m].Addr)
				sameRepl := hr.replID != "" && hr.replID == hm.replID
				if sameAddr || sameRepl {
					fs = append(fs, Finding{Code: FindingReplicates, Severity: SeverityCrit,
						Message: fmt.Sprintf("%s replicates %s: they are not independent masters", masters[r].Name, masters[m].Name),
						Fix:     fmt.Sprintf("run REPLICAOF NO ONE on %s (and empty it), or drop it from the config", masters[r].Name)})
				}
			}
		}
	}
	return fs
}

func sameHostPort(a, b string) bool {
	norm := func(s string) string {
		s = strings.Replace(s, "localhost:", "127.0.0.1:", 1)
		return strings.Replace(s, "[::1]:", "127.0.0.1:", 1)
	}
	return norm(a) == norm(b)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
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

	server           string // "redis" or "valkey"
	version          string
	replID2          string // master_replid2: the replication ID before the last promotion
	secondReplOffset int64  // -1 unless this node was promoted since it started
	replicas         int    // connected_slaves
	minReplicas      int    // min-replicas-to-write (-1 unknown)
}
