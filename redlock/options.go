package redlock

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"
)

// Defaults for a Client's options.
const (
	DefaultRetries     = 32
	DefaultRetryDelay  = 100 * time.Millisecond
	DefaultDriftFactor = 0.01
	DefaultNodeTimeout = 50 * time.Millisecond
)

// Internal tuning of the per-master pipelines (see pipeline.go).
const (
	defaultConns      = 1    // connections per master, taken from its pool (one batches best)
	defaultQueueLen   = 1024 // commands queued per connection before callers fail fast
	minStallTimeout   = 500 * time.Millisecond
	stallNodeTimeouts = 10 // a reply overdue by this many node timeouts breaks its connection
)

// options holds a Client's settings; defaults live in defaultOptions.
type options struct {
	retries       int
	retryDelay    time.Duration
	driftFactor   float64
	nodeTimeout   time.Duration
	fencing       bool
	owner         string
	keyPrefix     string
	maxExtensions int // 0: unlimited

	conns    int           // connections per master
	queueLen int           // queue bound per connection
	stall    time.Duration // 0: derived from nodeTimeout

	restartGuard time.Duration // -1: each acquisition's TTL; 0: off
	onRestart    func()        // set by the Client: wakes held locks (restart.go)
}

func defaultOptions() options {
	return options{
		retries:      DefaultRetries,
		retryDelay:   DefaultRetryDelay,
		driftFactor:  DefaultDriftFactor,
		nodeTimeout:  DefaultNodeTimeout,
		owner:        defaultOwner(),
		conns:        defaultConns,
		queueLen:     defaultQueueLen,
		restartGuard: defaultRestartGuard,
	}
}

// defaultRestartGuard is the restart guard of a Client without WithRestartGuard: -1,
// each acquisition's TTL. (This package's tests, whose servers have all just started,
// turn it off.)
var defaultRestartGuard time.Duration = -1

// defaultOwner is host:pid, the owner an operator sees when none is configured.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// validate reports the first option value that cannot work, naming the option.
func (o *options) validate() error {
	switch {
	case o.retries < 0:
		return fmt.Errorf("redlock: WithRetries(%d): must be >= 0", o.retries)
	case o.retryDelay < 0:
		return fmt.Errorf("redlock: WithRetryDelay(%v): must be >= 0", o.retryDelay)
	case !(o.driftFactor >= 0 && o.driftFactor < 0.5):
		return fmt.Errorf("redlock: WithDriftFactor(%v): must be in [0, 0.5)", o.driftFactor)
	case o.nodeTimeout <= 0:
		return fmt.Errorf("redlock: WithNodeTimeout(%v): must be > 0", o.nodeTimeout)
	case o.maxExtensions < 0:
		return fmt.Errorf("redlock: WithMaxExtensions(%d): must be >= 0", o.maxExtensions)
	case o.conns < 1 || o.conns > 64:
		return fmt.Errorf("redlock: %d connections per master: must be in [1, 64]", o.conns)
	case o.restartGuard < -1:
		return fmt.Errorf("redlock: WithRestartGuard(%v): must be >= 0", o.restartGuard)
	case o.queueLen < 1:
		return fmt.Errorf("redlock: queue length %d: must be >= 1", o.queueLen)
	}
	if err := checkOwner(o.owner); err != nil {
		return err
	}
	if strings.ContainsFunc(o.keyPrefix, unicode.IsControl) {
		return fmt.Errorf("redlock: WithKeyPrefix(%q): control characters are not allowed", o.keyPrefix)
	}
	if o.stall == 0 {
		o.stall = max(minStallTimeout, stallNodeTimeouts*o.nodeTimeout)
	}
	return nil
}

// checkOwner accepts any non-empty owner without control characters or spaces, so that
// a value always reads back as owner#hex[#token].
func checkOwner(s string) error {
	if s == "" {
		return fmt.Errorf("redlock: WithOwner(%q): owner must not be empty", s)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return fmt.Errorf("redlock: WithOwner(%q): owner must not contain spaces or control characters", s)
	}
	return nil
}

// Option configures a Client; New rejects values that cannot work.
type Option func(*options)

// WithRetries sets how many attempts Acquire makes after the first (0 = one try).
func WithRetries(n int) Option { return func(o *options) { o.retries = n } }

// WithRetryDelay sets the upper bound of the random delay between attempts (0 = retry at once).
func WithRetryDelay(d time.Duration) Option { return func(o *options) { o.retryDelay = d } }

// WithDriftFactor sets the clock drift allowance as a fraction of the TTL, in [0, 0.5);
// every lock's validity is shortened by ttl*f + 2ms.
func WithDriftFactor(f float64) Option { return func(o *options) { o.driftFactor = f } }

// WithNodeTimeout bounds how long any operation waits for one master's reply; keep it
// small next to the TTLs used.
func WithNodeTimeout(d time.Duration) Option { return func(o *options) { o.nodeTimeout = d } }

// WithFencing makes every acquisition carry a token strictly greater than that of every
// earlier acquisition of the same resource (as long as masters keep their fence counters).
func WithFencing() Option { return func(o *options) { o.fencing = true } }

// WithOwner sets the owner part of lock values (default host:pid); it must be non-empty
// and free of spaces and control characters.
func WithOwner(s string) Option { return func(o *options) { o.owner = s } }

// WithKeyPrefix sets a prefix prepended to every resource name to form its key.
func WithKeyPrefix(p string) Option { return func(o *options) { o.keyPrefix = p } }

// WithMaxExtensions caps how many times one lock may be extended (0 = no cap); Extend
// beyond the cap fails with ErrExtensionLimit and sends nothing.
func WithMaxExtensions(n int) Option { return func(o *options) { o.maxExtensions = n } }

// WithConnsPerMaster sets how many connections the client takes from each master's pool
// and keeps for its pipelines (default 1, which batches best; at most 64). Commands on
// one key always use the same connection, so they execute in the order they were issued.
func WithConnsPerMaster(n int) Option { return func(o *options) { o.conns = n } }

// WithRestartGuard sets how long after a restart a master does not count toward an
// acquisition's quorum, unless it persists every write (appendonly yes, appendfsync
// always): a master restarted without its data has forgotten locks that are still
// valid, and counting it could let a second holder in. The default is each
// acquisition's own TTL (the delayed restart of the Redlock algorithm); 0 turns the
// guard off. The cost: after a fleet-wide restart no lock can be taken for one TTL.
func WithRestartGuard(d time.Duration) Option {
	return func(o *options) {
		o.restartGuard = d
		if d < 0 {
			o.restartGuard = -2 // rejected by validate
		}
	}
}
