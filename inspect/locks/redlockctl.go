package locks

import (
	"strconv"

	"github.com/redlockctl/redlockctl/redlock"
)

// Evidence of this project's own values, exported for callers that parse them with
// redlock.ParseValue themselves.
const (
	EvidenceRedlockctl       = "value <owner>#<32 hex> as redlockctl writes it"
	EvidenceRedlockctlFenced = "value <owner>#<32 hex>#<token> as redlockctl writes it in fenced mode"
)

// decodeRedlockctl recognises this project's own values, `<owner>#<32 hex>` and, in
// fenced mode, `<owner>#<32 hex>#<token>` (redlock.ParseValue; redlock/values.go). The
// fence counter `<key>:fence` is a companion. Renewal is an owner-checked PEXPIRE that
// never re-creates a key; release is compare-and-delete.
func decodeRedlockctl(in input) (Lock, bool) {
	owner, token, ok := redlock.ParseValue(in.Value)
	if !ok {
		return Lock{}, false
	}
	l := stringLock(in, Redlockctl, EvidenceRedlockctl)
	l.Owner, l.Token = owner, token
	l.Fields = []Field{{"owner", owner}}
	if token > 0 {
		l.Kind = "fenced"
		l.Evidence = EvidenceRedlockctlFenced
		l.Fields = append(l.Fields, Field{"token", strconv.FormatInt(token, 10)})
	}
	l.Companions = []Companion{{Key: redlock.FenceKey(in.Key), Role: RoleFenceCounter, Type: TypeString}}
	l.Renewal = "owner-checked PEXPIRE at ttl/3; never re-creates a deleted key"
	return l, true
}
