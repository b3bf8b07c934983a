package redlock

import "time"

// Defaults for a Client's options.
const (
	DefaultRetries     = 32
	DefaultRetryDelay  = 100 * time.Millisecond
	DefaultDriftFactor = 0.01
	DefaultNodeTimeout = 50 * time.Millisecond
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
}

// Option configures a Client.
type Option func(*options)

// WithRetries sets how many attempts Acquire makes after the first (0 = one try).
func WithRetries(n int) Option { return func(o *options) { o.retries = n } }

// WithRetryDelay sets the upper bound of the random delay between attempts.
func WithRetryDelay(d time.Duration) Option { return func(o *options) { o.retryDelay = d } }

// WithDriftFactor sets the clock drift allowance as a fraction of the TTL.
func WithDriftFactor(f float64) Option { return func(o *options) { o.driftFactor = f } }

// WithNodeTimeout bounds every command sent to one master.
func WithNodeTimeout(d time.Duration) Option { return func(o *options) { o.nodeTimeout = d } }

// WithFencing makes every acquisition carry a strictly increasing fence token.
func WithFencing() Option { return func(o *options) { o.fencing = true } }

// WithOwner sets the owner part of lock values (default host:pid).
func WithOwner(s string) Option { return func(o *options) { o.owner = s } }

// WithKeyPrefix sets a prefix prepended to every resource name to form its key.
func WithKeyPrefix(p string) Option { return func(o *options) { o.keyPrefix = p } }

// WithMaxExtensions caps how many times one lock may be extended (0 = no cap).
func WithMaxExtensions(n int) Option { return func(o *options) { o.maxExtensions = n } }
