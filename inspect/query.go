package inspect

import (
	"fmt"
	"strings"

	"github.com/redlockctl/redlockctl/internal/config"
)

// Query is redlockctl's one filter language, the same in the console's `/`, `dump
// --filter` and `doctor --filter`:
//
//   - words separated by spaces, every one must match (AND);
//   - a word FIELD:PATTERN matches one field: owner, lib (the library), state or value;
//   - any other word matches the resource name, or with no glob characters also the
//     owner and the value;
//   - a PATTERN with * ? or [ is a glob (Redis syntax: * ? [abc] [^a] \x) on the whole
//     text, case-sensitive; without them it is a case-insensitive substring.
//
// So `billing:*` is every resource whose name starts with billing:, `worker-7` every
// row whose name, owner or value contains worker-7, and `lib:redisson state:held` every
// held Redisson lock.
type Query struct {
	terms []queryTerm
	lower bool // some term is a substring: fields are matched lower-cased
}

type queryTerm struct {
	field string // "" (name, or name/owner/value), "owner", "lib", "state", "value"
	glob  bool
	pat   string // lower-cased for a substring
}

// QueryFields are what a query matches in a row.
type QueryFields struct{ Resource, Owner, Value, Library, State string }

// queryField names the fields a word may name.
var queryField = map[string]string{"owner": "owner", "lib": "lib", "library": "lib", "state": "state", "value": "value"}

// ParseQuery reads a filter; an error names the word at fault. "" matches every row.
func ParseQuery(s string) (Query, error) {
	var q Query
	for _, w := range strings.Fields(s) {
		t := queryTerm{pat: w}
		if f, p, ok := strings.Cut(w, ":"); ok {
			if name, known := queryField[strings.ToLower(f)]; known {
				t.field, t.pat = name, p
			}
		}
		if t.pat == "" {
			return Query{}, fmt.Errorf("%q: nothing to match after %s:", w, t.field)
		}
		if t.glob = strings.ContainsAny(t.pat, "*?["); t.glob {
			if err := config.CheckGlob(t.pat); err != nil {
				return Query{}, fmt.Errorf("%q: %v", w, err)
			}
		} else {
			t.pat, q.lower = strings.ToLower(t.pat), true
		}
		q.terms = append(q.terms, t)
	}
	return q, nil
}

// Empty reports whether q matches every row.
func (q Query) Empty() bool { return len(q.terms) == 0 }

// Match reports whether f matches every word of q.
func (q Query) Match(f QueryFields) bool {
	var lower QueryFields
	if q.lower {
		lower = QueryFields{strings.ToLower(f.Resource), strings.ToLower(f.Owner), strings.ToLower(f.Value), strings.ToLower(f.Library), strings.ToLower(f.State)}
	}
	return q.MatchLower(f, lower)
}

// MatchLower is Match with the fields already lower-cased by the caller (the console
// keeps them so, for 100k rows a keystroke).
func (q Query) MatchLower(f, lower QueryFields) bool {
	for _, t := range q.terms {
		if !t.match(f, lower) {
			return false
		}
	}
	return true
}

func (t queryTerm) match(f, lower QueryFields) bool {
	one := func(orig, low string) bool {
		if t.glob {
			return config.MatchGlob(t.pat, orig)
		}
		return strings.Contains(low, t.pat)
	}
	switch t.field {
	case "owner":
		return one(f.Owner, lower.Owner)
	case "lib":
		return one(f.Library, lower.Library)
	case "state":
		return one(f.State, lower.State)
	case "value":
		return one(f.Value, lower.Value)
	}
	if t.glob {
		return config.MatchGlob(t.pat, f.Resource)
	}
	return one(f.Resource, lower.Resource) || one(f.Owner, lower.Owner) || one(f.Value, lower.Value)
}

// fieldsOf are the query fields of r.
func fieldsOf(r *Resource) QueryFields {
	return QueryFields{Resource: r.Resource, Owner: r.Owner, Value: r.Value, Library: r.Library, State: r.State}
}
