// Package inspect is the model of what redlockctl reads from N Redis masters: a
// Snapshot of every master and every lock key judged across them (Resource, Node,
// Master, Finding, Event), its summary and exit code, the queries and filters that
// select rows, and the JSON form that is `dump -o json`'s contract.
//
// It is the floor the inspect layers stand on: inspect/wire (bytes on a connection),
// inspect/verdict (judging), inspect/poll (reading masters) and inspect/carry (rows
// across polls) import it; it imports none of them. It never reads a server, never
// judges and never writes: it holds what the layers above found.
package inspect

import (
	"time"

	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// Resource states, as reported in Resource.State.
const (
	StateHeld    = "held"    // one value with a TTL on at least a quorum of masters
	StatePartial = "partial" // values on fewer than a quorum, none reaching it
	StateSplit   = "split"   // two or more different values, none reaching quorum
	StateNoTTL   = "no-ttl"  // a value without expiry on some master
	StateForeign = "foreign" // the key is not a string on some master
	StateFree    = "free"    // a configured resource that no master holds
	// StateSemaphore is a semaphore whose holders hold some of its permits: healthy,
	// however many holders it has (Resource.Permits).
	StateSemaphore = "semaphore"
	// StateBookkeeping is a library's own bookkeeping key (a fencing counter, a digest
	// registry): it belongs to that library and is no lock (locks.BookkeepingOf).
	StateBookkeeping = "bookkeeping"
)

// Snapshot is one poll of every master, analysed. Its JSON form is the stable
// `dump -o json` contract (see docs/scripting.md). Values, keys and
// resource names are byte strings: where one is not valid UTF-8, its JSON object also
// carries "value_b64" (or "key_b64", "resource_b64"): the exact bytes in standard
// base64, while "value" then holds a display form with U+FFFD for invalid bytes.
type Snapshot struct {
	TakenAt time.Time `json:"taken_at"`
	// Config is the config file the masters came from ("" for --masters alone).
	Config   string `json:"config,omitempty"`
	Quorum   int    `json:"quorum"`
	Complete bool   `json:"complete"` // every master answered and no scan was capped
	// PollMs is how long the poll took; Slow says it took longer than
	// inspect.poll_interval. A slow poll is not a master down: liveness is judged per
	// round trip (inspect.timeout), not on the whole poll. Absent for a snapshot not
	// polled (poll.Replay).
	PollMs    float64    `json:"poll_ms,omitempty"`
	Slow      bool       `json:"slow,omitempty"`
	Masters   []Master   `json:"masters"`
	Resources []Resource `json:"resources"`
	Summary   Summary    `json:"summary"`
	// Findings that concern the set of masters as a whole (even N, duplicates).
	Findings []Finding `json:"findings"`
	// Events seen since the previous poll (owner changes, extensions, expiries,
	// releases); the console keeps them as per-resource history.
	Events []Event `json:"-"`
}

// Master is one master's part of a snapshot.
type Master struct {
	Name      string       `json:"name"`
	Addr      string       `json:"addr"`
	Up        bool         `json:"up"`
	Error     string       `json:"error"`
	ErrorKind errkind.Kind `json:"error_kind,omitempty"` // why it did not answer: auth, tls, refused, timeout, dns, protocol, closed, other
	RTTMs     float64      `json:"rtt_ms"`
	// ReadMs is how long reading this master took in the poll (TIME to the last key).
	ReadMs             float64   `json:"read_ms,omitempty"`
	ClockOffsetMs      float64   `json:"clock_offset_ms"`
	ClockUncertaintyMs float64   `json:"clock_uncertainty_ms"`
	ClockRatePPM       *float64  `json:"clock_rate_ppm"` // nil until enough samples
	ClockJump          bool      `json:"clock_jump"`
	UptimeS            int64     `json:"uptime_s"`
	Role               string    `json:"role"`
	AppendOnly         string    `json:"appendonly"`
	AppendFsync        string    `json:"appendfsync"`
	MaxmemoryPolicy    string    `json:"maxmemory_policy"`
	Findings           []Finding `json:"findings"`
	Capped             bool      `json:"capped"`  // SCAN stopped at max_keys
	Server             string    `json:"server"`  // "redis" or "valkey", from INFO ("" until known)
	Version            string    `json:"version"` // redis_version or valkey_version

	// Topologies (omitted for a plain server). Via is "sentinel" (Addr is then the
	// master the sentinels reported and ROLE confirmed) or "cluster" (Addr lists the
	// seeds; Shards holds each shard master, whose Name is "<entry> shard <addr>").
	Via                string   `json:"via,omitempty"`
	SentinelMasterName string   `json:"sentinel_master_name,omitempty"`
	Shards             []Master `json:"shards,omitempty"`
	Slots              string   `json:"slots,omitempty"`    // a shard's slot ranges, e.g. "0-5460"
	Replicas           *int     `json:"replicas,omitempty"` // a shard's (or Sentinel group's) replicas seen
	// Incomplete says why keys of this master may be missing from the snapshot (a
	// slot migrated during the poll); Complete is then false.
	Incomplete string `json:"incomplete,omitempty"`
}

// Finding is a doctor finding: something wrong with a master's setup or clock.
type Finding struct {
	Code     string `json:"code"`     // stable, e.g. "clock-rate", "evicting-policy"
	Severity string `json:"severity"` // "info", "warn" or "crit"
	Master   string `json:"master,omitempty"`
	Message  string `json:"message"`
	Fix      string `json:"fix"` // one line: what to do about it
}

// Resource is one lock key judged across all masters (one row of the console).
type Resource struct {
	Resource string `json:"resource"`
	Key      string `json:"key"`
	State    string `json:"state"`
	Value    string `json:"value"` // the holding (or most common) value
	Owner    string `json:"owner"`
	Token    int64  `json:"token"`
	// Library names the library that wrote the holding value (a locks.* id, "unknown"
	// when no decoder recognises it; empty for a free row), Kind the kind of lock where
	// the library has several, LibraryEvidence why (see package inspect/locks).
	Library         string `json:"library"`
	Kind            string `json:"kind"`
	LibraryEvidence string `json:"library_evidence"`
	// Count is the holder's reentrancy count where the format has one (Redisson).
	Count int `json:"-"`
	// Scope is how the row is judged: "redlock" (by the quorum of the masters) or
	// "single" (a single-instance lock, on its own master: see locks.ScopeOf and
	// [[inspect.scopes]]). Instances lists, for a single-instance row, the masters
	// that hold a lock at the key, each an independent lock.
	Scope     string   `json:"scope"`
	Instances []string `json:"instances,omitempty"`
	// Permits is, for a semaphore (state semaphore), how many permits its holders hold;
	// PermitLimit how many it has, where Redis holds that (0: only clients know);
	// AvailablePermits how many are free, where Redis counts them (Redisson's
	// RPermitExpirableSemaphore; absent otherwise).
	Permits          int       `json:"permits,omitempty"`
	PermitLimit      int       `json:"permit_limit,omitempty"`
	AvailablePermits *int      `json:"available_permits,omitempty"`
	Holders          int       `json:"holders"` // masters holding Value
	Uncertain        bool      `json:"uncertain"`
	ValidityMs       int64     `json:"validity_ms"`
	TTLSpreadMs      int64     `json:"ttl_spread_ms"`
	Anomalies        []Anomaly `json:"anomalies"`
	Nodes            []Node    `json:"nodes"` // one per master, in config order
}

// Anomaly is something odd about one resource.
type Anomaly struct {
	Code    string `json:"code"` // "stray-value", "no-ttl-node", "wrongtype-node", "ttl-spread"
	Master  string `json:"master,omitempty"`
	Message string `json:"message"`
}

// Node is what one master holds for one resource.
type Node struct {
	Master string `json:"master"`
	Value  string `json:"value"`   // empty when absent; see Snapshot for binary values
	PTTLMs int64  `json:"pttl_ms"` // -2 absent, -1 no expiry, else ms left
	Type   string `json:"type"`    // "string", "none", or the Redis type of a foreign key
	Error  string `json:"error"`   // non-empty when the master did not answer for this key
	// Lock is the decoded lock of a hash key (nil for strings, which are decoded from
	// Value): a recognised hash lock has its holder in Value.
	Lock *locks.Lock `json:"-"`
	// ErrorKind classifies Error (see package errkind); absent from JSON without one.
	ErrorKind errkind.Kind `json:"error_kind,omitempty"`
	// LastSeen is set only by a Tracker, on the node of a master that did not answer
	// this time: what it held when it last answered. Absent from JSON otherwise.
	LastSeen *LastSeen `json:"last_seen,omitempty"`
}

// LastSeen is what an unreachable master held for a resource when it last answered.
// ProjectedPTTLMs is a projection, not a reading: the PTTL sampled then minus the time
// since (never below 1 while the node is kept; -1 for a key without expiry).
type LastSeen struct {
	Master          string    `json:"master"`
	At              time.Time `json:"at"` // when the master last answered holding it
	ProjectedPTTLMs int64     `json:"projected_pttl_ms"`
	// Value is what it held (in the row's Value unless the row is split). Not in JSON:
	// the row carries the value.
	Value string `json:"-"`
	// SampledPTTLMs is the PTTL read at At, which every projection starts from.
	SampledPTTLMs int64 `json:"-"`
}

// Summary counts a snapshot's rows and findings. Resources counts every row; the
// state counts are those of the Redlock-scope rows (the rows judged by the quorum),
// and Single counts the single-instance rows on their own.
type Summary struct {
	Resources int `json:"resources"`
	Held      int `json:"held"`
	Partial   int `json:"partial"`
	Split     int `json:"split"`
	NoTTL     int `json:"no_ttl"`
	Foreign   int `json:"foreign"`
	Free      int `json:"free"`
	Semaphore int `json:"semaphore"`
	// SingleSummary counts the single-instance rows by state (never partial or split).
	SingleSummary
	MastersUp int `json:"masters_up"`
	Findings  int `json:"findings"`
}

// SingleSummary counts the single-instance rows by state; in JSON its fields sit
// flat in the summary ("single_held", ...), so that every summary value is a number.
type SingleSummary struct {
	Held      int `json:"single_held"`
	NoTTL     int `json:"single_no_ttl"`
	Foreign   int `json:"single_foreign"`
	Free      int `json:"single_free"`
	Semaphore int `json:"single_semaphore"`
}

// Event is a change to a resource seen between two polls.
type Event struct {
	At       time.Time
	Resource string
	Kind     string // "acquired", "owner-changed", "extended", "expired", "released", "split", "partial"
	Value    string
	Detail   string
}

// Anomaly codes, as reported in Anomaly.Code.
const (
	AnomalyStray     = "stray-value"    // a different value on a minority while another holds quorum
	AnomalyNoTTL     = "no-ttl-node"    // a master holds a value without expiry
	AnomalyWrongType = "wrongtype-node" // a master holds the key as a non-string
	AnomalyTTLSpread = "ttl-spread"     // the holders' projected expiries differ by more than expected
)

// Node types beyond the Redis type names.
const (
	TypeString = "string"
	TypeNone   = "none"
)
