package verdict

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
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
	m       *inspect.Master
	h       *Health
	timeErr string // why TIME was refused this poll ("" when it answered)
	longest time.Duration
}

// masterChecks are the checks of a master that answered, in the order their findings
// are listed. A master that did not answer gets the FindingDown finding only.
var masterChecks = []masterCheck{
	{inspect.FindingNoTime, func(c *masterCtx) (string, string, string, bool) {
		if c.timeErr == "" {
			return "", "", "", false
		}
		return inspect.SeverityWarn, c.m.Name + " refused TIME (" + firstLine(c.timeErr) + "): its clock cannot be checked",
			"allow TIME for the inspector's user (ACL: +time)", true
	}},
	{inspect.FindingScanCapped, func(c *masterCtx) (string, string, string, bool) {
		return inspect.SeverityWarn, fmt.Sprintf("%s has more keys matching the patterns than max_keys (%d): the dump is partial", c.m.Name, c.cfg.Inspect.MaxKeys),
			"narrow inspect.patterns to the lock keys or raise inspect.max_keys", c.m.Capped
	}},
	{inspect.FindingNoInfo, func(c *masterCtx) (string, string, string, bool) {
		return inspect.SeverityWarn, c.m.Name + " refused INFO (" + firstLine(c.h.InfoErr) + "): role, uptime and persistence cannot be checked",
			"allow INFO for the inspector's user (ACL: +info)", c.h.InfoErr != "" && c.h.Role == ""
	}},
	{inspect.FindingNotMaster, func(c *masterCtx) (string, string, string, bool) {
		return inspect.SeverityCrit, fmt.Sprintf("%s has role %s, not master: Redlock needs independent masters", c.m.Name, c.h.Role),
			"run REPLICAOF NO ONE on it, or configure the real master instead of the replica", c.h.Role != "" && c.h.Role != "master"
	}},
	{inspect.FindingRestartedRecently, func(c *masterCtx) (string, string, string, bool) {
		up := time.Duration(c.m.UptimeS) * time.Second
		fix := "keep a restarted master out for max TTL before it rejoins, or run it with appendonly yes + appendfsync always"
		if c.cfg.Lock.RestartGuard != 0 {
			fix = fmt.Sprintf("acquisitions leave it out of quorums for another %s (lock.restart_guard); or run it with appendonly yes + appendfsync always", inspect.Duration(c.longest-up))
		}
		return inspect.SeverityCrit,
			fmt.Sprintf("%s restarted %s ago, less than the longest lock TTL %s, without appendfsync always: it may have forgotten locks that are still valid", c.m.Name, inspect.Uptime(c.m.UptimeS), inspect.Duration(c.longest)),
			fix, c.h.Role != "" && up < c.longest && !c.h.durable()
	}},
	{inspect.FindingEvictingPolicy, func(c *masterCtx) (string, string, string, bool) {
		h := c.h
		return inspect.SeverityCrit,
			fmt.Sprintf("%s has maxmemory %d with maxmemory-policy %s: it can evict lock keys before they expire", c.m.Name, h.Maxmemory, h.Policy),
			"set maxmemory-policy noeviction (or maxmemory 0) on lock masters",
			h.Role != "" && h.Maxmemory > 0 && (strings.HasPrefix(h.Policy, "allkeys-") || strings.HasPrefix(h.Policy, "volatile-"))
	}},
	{inspect.FindingFenceNotDurable, func(c *masterCtx) (string, string, string, bool) {
		return inspect.SeverityWarn,
			fmt.Sprintf("fencing is on but %s runs appendonly %s, appendfsync %s: a restart can lose fence counters", c.m.Name, c.h.AppendOnly, c.h.Fsync),
			"run lock masters with appendonly yes and appendfsync always", c.h.Role != "" && c.cfg.Lock.Fencing && !c.h.durable()
	}},
	{inspect.FindingClockJump, func(c *masterCtx) (string, string, string, bool) {
		return inspect.SeverityCrit, c.m.Name + "'s clock jumped in the last minute: locks on it may expire early or late",
			"fix time sync on the host (slew, never step: chrony makestep off)", c.m.ClockJump
	}},
	{inspect.FindingClockOffset, func(c *masterCtx) (string, string, string, bool) {
		return inspect.SeverityWarn, fmt.Sprintf("%s's clock is %+.0fms (±%.1fms) off this host's", c.m.Name, c.m.ClockOffsetMs, c.m.ClockUncertaintyMs),
			"check NTP on both hosts", math.Abs(c.m.ClockOffsetMs) > float64(offsetWarn.Milliseconds())
	}},
	{inspect.FindingClockRate, func(c *masterCtx) (string, string, string, bool) {
		if c.m.ClockRatePPM == nil {
			return "", "", "", false
		}
		rate, limit := *c.m.ClockRatePPM, c.cfg.Lock.DriftFactor*1e6
		switch {
		case math.Abs(rate) > limit && limit > 0:
			return inspect.SeverityCrit, fmt.Sprintf("%s's clock runs %+.0f ppm (%.2f%%), beyond the drift allowance of %.2f%%: locks expire before their holders expect", c.m.Name, rate, rate/1e4, c.cfg.Lock.DriftFactor*100),
				"fix the host's clock source, or raise lock.drift_factor above the measured rate", true
		case math.Abs(rate) > rateWarnPPM:
			return inspect.SeverityWarn, fmt.Sprintf("%s's clock runs %+.0f ppm against this host's", c.m.Name, rate),
				"check time sync on both hosts", true
		}
		return "", "", "", false
	}},
	{inspect.FindingRTTHigh, func(c *masterCtx) (string, string, string, bool) {
		return inspect.SeverityWarn, fmt.Sprintf("%s's round trip %.1fms is close to lock.node_timeout %v: acquisitions will time out on it", c.m.Name, c.m.RTTMs, c.cfg.Lock.NodeTimeout),
			"raise lock.node_timeout or move the master closer", c.m.RTTMs > 0 && c.m.RTTMs > rttWarnRatio*float64(c.cfg.Lock.NodeTimeout.Microseconds())/1000
	}},
}

// durable reports whether the master keeps every acknowledged write across a restart.
func (h *Health) durable() bool { return h.AppendOnly == "yes" && h.Fsync == "always" }

// MasterFindings lists what is wrong with one master's setup or clock: the checks of
// masterChecks in order, or FindingDown alone when it did not answer. h is the last
// known health (nil if never read), timeErr why this poll's TIME was refused, maxPTTL the longest lock
// TTL seen in this snapshot.
func MasterFindings(cfg *config.Config, m *inspect.Master, h *Health, timeErr string, maxPTTL time.Duration) []inspect.Finding {
	if !m.Up {
		fix := "check that the server runs and is reachable; locks need a quorum of masters up"
		if m.ErrorKind != errkind.None {
			fix = m.ErrorKind.Hint() + "; locks need a quorum of masters up"
		}
		return []inspect.Finding{{Code: inspect.FindingDown, Severity: inspect.SeverityCrit, Master: m.Name,
			Message: fmt.Sprintf("%s (%s) did not answer (%s): %s", m.Name, m.Addr, m.ErrorKind, m.Error), Fix: fix}}
	}
	if h == nil {
		h = &Health{} // never read: the checks of health find nothing
	}
	c := &masterCtx{cfg: cfg, m: m, h: h, timeErr: timeErr, longest: max(cfg.Inspect.MaxTTL, maxPTTL)}
	var fs []inspect.Finding
	for _, ch := range masterChecks {
		if sev, msg, fix, ok := ch.judge(c); ok {
			fs = append(fs, inspect.Finding{Code: ch.code, Severity: sev, Master: m.Name, Message: msg, Fix: fix})
		}
	}
	return fs
}

// SnapshotFindings lists what is wrong with the set of masters as a whole: an even
// count, the same server configured twice, one master replicating another.
func SnapshotFindings(cfg *config.Config, masters []inspect.Master, hs []*Health) []inspect.Finding {
	var fs []inspect.Finding
	if n := len(masters); n%2 == 0 {
		fs = append(fs, inspect.Finding{Code: inspect.FindingEvenMasters, Severity: inspect.SeverityWarn,
			Message: fmt.Sprintf("%d masters: quorum %d tolerates no more failures than %d masters would", n, n/2+1, n-1),
			Fix:     "use an odd number of masters (3 or 5)"})
	}
	for _, m := range cfg.Masters {
		if m.PasswordLiteral {
			fs = append(fs, inspect.Finding{Code: inspect.FindingLiteralPassword, Severity: inspect.SeverityWarn, Master: m.Name,
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
		fs = append(fs, inspect.Finding{Code: inspect.FindingNoQuorum, Severity: inspect.SeverityCrit,
			Message: fmt.Sprintf("only %d of %d masters answered: no lock can be acquired or proven held", up, len(masters)),
			Fix:     "bring masters back up"})
	}
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			a, b := hs[i], hs[j]
			if a == nil || b == nil {
				continue
			}
			if a.RunID != "" && a.RunID == b.RunID {
				fs = append(fs, inspect.Finding{Code: inspect.FindingDuplicateServer, Severity: inspect.SeverityCrit,
					Message: fmt.Sprintf("%s and %s are the same Redis server (run_id %s)", masters[i].Name, masters[j].Name, a.RunID),
					Fix:     "configure N distinct masters: one server counted twice breaks the quorum"})
				continue
			}
			for _, pair := range [][2]int{{i, j}, {j, i}} {
				r, m := pair[0], pair[1]
				hr, hm := hs[r], hs[m]
				if hr.Role != "slave" && hr.Role != "replica" {
					continue
				}
				sameAddr := hr.MasterHost != "" && sameHostPort(hr.MasterHost+":"+hr.MasterPort, cfg.Masters[m].Addr)
				sameRepl := hr.ReplID != "" && hr.ReplID == hm.ReplID
				if sameAddr || sameRepl {
					fs = append(fs, inspect.Finding{Code: inspect.FindingReplicates, Severity: inspect.SeverityCrit,
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

// Health is what INFO and CONFIG GET said about a master.
type Health struct {
	InfoErr    string // INFO was refused
	UptimeS    int64
	RunID      string
	Role       string
	MasterHost string
	MasterPort string
	ReplID     string
	AppendOnly string // "yes", "no" or "unknown"
	Fsync      string
	Maxmemory  int64 // -1 unknown
	Policy     string

	Server           string // "redis" or "valkey"
	Version          string
	ReplID2          string // master_replid2: the replication ID before the last promotion
	SecondReplOffset int64  // -1 unless this node was promoted since it started
	Replicas         int    // connected_slaves
	MinReplicas      int    // min-replicas-to-write (-1 unknown)
}
