package inspect

import (
	"context"
	"errors"
	"time"

	"github.com/redlockctl/redlockctl/redlock"
)

// ErrReadOnly is returned by every Admin method when the config or flags say read-only.
// It is the single gate through which every write command passes.
var ErrReadOnly = errors.New("read-only: no write command is sent")

// Admin performs operator actions (acquire, extend, release, force-release) through the
// redlock library and appends each one to the audit log.
type Admin struct {
	cfg    *Config
	client *redlock.Client
}

// NodeOutcome is one master's result of an admin action.
type NodeOutcome struct {
	Master  string `json:"master"`
	Outcome string `json:"outcome"` // redlock.Outcome.String()
	Error   string `json:"error,omitempty"`
}

// ActionResult is what an admin action did, per master; it is also the audit log line.
type ActionResult struct {
	Time     time.Time     `json:"time"`
	Operator string        `json:"operator"` // user@host
	Action   string        `json:"action"`   // "acquire", "extend", "release", "force-release", "force-release-any"
	Resource string        `json:"resource"`
	Value    string        `json:"value"`
	Token    int64         `json:"token,omitempty"`
	Validity time.Duration `json:"validity_ms,omitempty"`
	Quorum   int           `json:"quorum"`
	Done     int           `json:"done"` // masters where it took effect
	Up       int           `json:"up"`   // masters that answered
	Nodes    []NodeOutcome `json:"nodes"`
	Error    string        `json:"error,omitempty"`
}

// ExitCode maps a result to the admin exit codes: 0 done on every reachable master,
// 3 done on a quorum but not every master, 1 not done.
func (r ActionResult) ExitCode() int { panic("TODO") }

// NewAdmin returns an Admin over client; it writes to cfg.AuditLog when set.
func NewAdmin(cfg *Config, client *redlock.Client) *Admin { return &Admin{cfg: cfg, client: client} }

// Acquire takes resource for ttl as owner ("" = default); keep-alive is the caller's.
func (a *Admin) Acquire(ctx context.Context, resource string, ttl time.Duration, owner string) (*redlock.Lock, ActionResult, error) {
	panic("TODO")
}

// Extend extends resource where it still holds value.
func (a *Admin) Extend(ctx context.Context, resource, value string, ttl time.Duration) (ActionResult, error) {
	panic("TODO")
}

// Release deletes resource where it still holds value (compare-and-delete).
func (a *Admin) Release(ctx context.Context, resource, value string) (ActionResult, error) {
	panic("TODO")
}

// ForceReleaseAny deletes resource on every master whatever it holds.
func (a *Admin) ForceReleaseAny(ctx context.Context, resource string) (ActionResult, error) {
	panic("TODO")
}
