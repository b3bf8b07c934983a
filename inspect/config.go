package inspect

import (
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock"
)

// Config is a parsed redlockctl config file (or --masters flag).
type Config struct {
	Path       string // file it came from; "" for --masters
	Name       string
	LabelColor string
	ReadOnly   bool
	AuditLog   string
	Lock       LockConfig
	Inspect    InspectConfig
	Masters    []MasterConfig
}

// LockConfig is the [lock] table: options for the redlock client.
type LockConfig struct {
	KeyPrefix   string
	DefaultTTL  time.Duration
	DriftFactor float64
	NodeTimeout time.Duration
	Retries     int
	RetryDelay  time.Duration
	Fencing     bool
}

// InspectConfig is the [inspect] table: what the poller reads and how often.
type InspectConfig struct {
	Patterns     []string
	Resources    []string
	PollInterval time.Duration
	ScanCount    int
	MaxKeys      int
	Timeout      time.Duration
	MaxTTL       time.Duration
}

// MasterConfig is one [[masters]] entry. Password holds the resolved secret and is
// never printed.
type MasterConfig struct {
	Name                  string
	Addr                  string
	Username              string
	Password              string
	PasswordLiteral       bool // the password was written in the file
	DB                    int
	TLS                   bool
	TLSCA                 string
	TLSCert               string
	TLSKey                string
	TLSServerName         string
	TLSInsecureSkipVerify bool
}

// Quorum returns N/2+1 for the configured masters.
func (c *Config) Quorum() int { return len(c.Masters)/2 + 1 }

// Pools dials nothing yet: it returns one pool per master with dial, read and write
// timeouts, AUTH and TLS from the config.
func (c *Config) Pools() ([]*redis.Pool, error) { panic("TODO") }

// LockOptions returns the redlock options the [lock] table asks for.
func (c *Config) LockOptions() []redlock.Option { panic("TODO") }
