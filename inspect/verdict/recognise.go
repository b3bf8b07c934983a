package verdict

import (
	"strconv"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
)

// recognise names the library of a judged row from its holding value (or, for a row
// that is foreign, why nobody recognises it), and fills the owner and token a decoded
// format carries.
func recognise(r *inspect.Resource, id locks.Identity) {
	r.Library, r.Kind, r.LibraryEvidence = "", "", ""
	if r.Value == "" && r.State != inspect.StateForeign {
		return
	}
	r.Library, r.Kind, r.LibraryEvidence = id.Label, id.Kind, id.Evidence
	if !id.IsLock() {
		return
	}
	if r.Owner == "" {
		r.Owner = id.Owner
	}
	if r.Nodes[id.Holding].Type != inspect.TypeString {
		r.Owner, r.Count = id.Owner, id.Count
		if id.Token > 0 {
			r.Token = id.Token
		}
	}
}

// MarkShared notes on node-redlock, bsm/redislock and rueidislock rows (named or guessed) a value
// that also holds other keys: those libraries lock several resources with one value,
// so the rows are one lock.
func MarkShared(rows []inspect.Resource) {
	seen := SharedCounts(rows)
	for i := range rows {
		if n := seen[rows[i].Value]; n > 1 && rows[i].Value != "" {
			NoteShared(&rows[i], n)
		}
	}
}

// SharedCounts counts the rows of node-redlock, bsm/redislock and rueidislock per value.
func SharedCounts(rows []inspect.Resource) map[string]int {
	var seen map[string]int
	for i := range rows {
		if locks.MultiKey(rows[i].Library) {
			if seen == nil {
				seen = map[string]int{}
			}
			seen[rows[i].Value]++
		}
	}
	return seen
}

// NoteShared notes on r that its value holds n keys.
func NoteShared(r *inspect.Resource, n int) {
	r.LibraryEvidence += "; the same value holds " + strconv.Itoa(n) + " keys: one lock over several resources"
}
