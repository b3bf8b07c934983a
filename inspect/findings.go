package inspect

// Finding codes. They are part of the output contract: `dump -o json`, the exporter's
// redlockctl_finding{code} series and the shipped alert rules name them, so a code is
// never renamed. Codes lists every one with what it means.
const (
	FindingDown               = "down"
	FindingNoTime             = "no-time"
	FindingScanCapped         = "scan-capped"
	FindingNoInfo             = "no-info"
	FindingNotMaster          = "not-master"
	FindingRestartedRecently  = "restarted-recently"
	FindingEvictingPolicy     = "evicting-policy"
	FindingFenceNotDurable    = "fence-not-durable"
	FindingClockJump          = "clock-jump"
	FindingClockOffset        = "clock-offset"
	FindingClockRate          = "clock-rate"
	FindingRTTHigh            = "rtt-high"
	FindingEvenMasters        = "even-masters"
	FindingLiteralPassword    = "literal-password"
	FindingNoQuorum           = "no-quorum"
	FindingDuplicateServer    = "duplicate-server"
	FindingReplicates         = "replicates"
	FindingClusterState       = "cluster-state"
	FindingSlotsUncovered     = "slots-uncovered"
	FindingShardNoReplica     = "shard-no-replica"
	FindingFailedOverRecently = "failed-over-recently"
	FindingMinReplicas        = "min-replicas"
	FindingSentinelDown       = "sentinel-down"
	FindingSentinelQuorum     = "sentinel-quorum"
	FindingFewSentinels       = "few-sentinels"
)

// FindingCode describes one finding code: where it is judged and what it means.
type FindingCode struct {
	Code    string
	Scope   string // "master", "fleet", "cluster" or "sentinel"
	Meaning string
}

// Codes is every finding code the doctor can report, in the order of the checks.
var Codes = []FindingCode{
	{FindingDown, "master", "the master did not answer"},
	{FindingNoTime, "master", "TIME was refused: the clock cannot be checked"},
	{FindingScanCapped, "master", "more keys match than max_keys: the read is partial"},
	{FindingNoInfo, "master", "INFO was refused: role, uptime and persistence cannot be checked"},
	{FindingNotMaster, "master", "the server is a replica, not an independent master"},
	{FindingRestartedRecently, "master", "restarted less than the longest lock TTL ago without appendfsync always"},
	{FindingEvictingPolicy, "master", "maxmemory with an eviction policy that can evict lock keys"},
	{FindingFenceNotDurable, "master", "fencing is on but a restart can lose fence counters"},
	{FindingClockJump, "master", "the clock stepped in the last minute"},
	{FindingClockOffset, "master", "the wall clock is over a second off this host's"},
	{FindingClockRate, "master", "the clock runs fast or slow (crit: beyond the drift allowance)"},
	{FindingRTTHigh, "master", "the round trip is close to lock.node_timeout"},
	{FindingEvenMasters, "fleet", "an even number of masters"},
	{FindingLiteralPassword, "fleet", "a password written in the config file"},
	{FindingNoQuorum, "fleet", "fewer than a quorum of masters answered"},
	{FindingDuplicateServer, "fleet", "two configured masters are the same server"},
	{FindingReplicates, "fleet", "one configured master replicates another"},
	{FindingClusterState, "cluster", "the cluster reports a state other than ok"},
	{FindingSlotsUncovered, "cluster", "slots not served by a healthy shard master"},
	{FindingShardNoReplica, "cluster", "a shard without a replica"},
	{FindingFailedOverRecently, "sentinel", "the group's master was promoted less than the longest lock TTL ago"},
	{FindingMinReplicas, "sentinel", "the master's min-replicas-to-write (information)"},
	{FindingSentinelDown, "sentinel", "some configured sentinels did not answer"},
	{FindingSentinelQuorum, "sentinel", "SENTINEL CKQUORUM failed"},
	{FindingFewSentinels, "sentinel", "fewer than 3 sentinels watch the group"},
}

// KnownCode reports whether code is one of Codes.
func KnownCode(code string) bool {
	for _, c := range Codes {
		if c.Code == code {
			return true
		}
	}
	return false
}

// Finding severities.
const (
	SeverityInfo = "info" // worth knowing; alone it does not change an exit code
	SeverityWarn = "warn"
	SeverityCrit = "crit"
)
