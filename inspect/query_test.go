package inspect

import (
	"strings"
	"testing"
)

func TestQuery(t *testing.T) {
	row := QueryFields{Resource: "billing:nightly", Owner: "Worker-7@host", Value: "Worker-7@host:3f2b", Library: "redsync", State: "held"}
	for _, c := range []struct {
		q    string
		want bool
	}{
		{"", true},
		{"billing", true},
		{"BILLING", true},                    // substring: any case
		{"worker-7", true},                   // bare word: owner too
		{"3f2b", true},                       // and value
		{"billing:*", true},                  // glob on the name
		{"Billing:*", false},                 // a glob is case-sensitive
		{"worker*", false},                   // a glob matches the name only
		{"billing:nightly", true},            // not a field: a plain word
		{"owner:host", true},                 //
		{"owner:billing", false},             // the owner only
		{"lib:redsync state:held", true},     // AND
		{"lib:redsync state:split", false},   //
		{"value:*:3f2b", true},               // glob on the value
		{"library:red", true},                //
		{"billing nightly worker-7", true},   //
		{"billing nightly worker-8", false},  //
		{"state:held billing:n?ghtly", true}, //
	} {
		q, err := ParseQuery(c.q)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", c.q, err)
			continue
		}
		if got := q.Match(row); got != c.want {
			t.Errorf("%q matches %v, want %v", c.q, got, c.want)
		}
	}
	for _, c := range []struct{ q, want string }{
		{"owner:", `"owner:": nothing to match`},
		{"x [a", `"[a"`},
	} {
		if _, err := ParseQuery(c.q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseQuery(%q) = %v, want an error naming %s", c.q, err, c.want)
		}
	}
}
