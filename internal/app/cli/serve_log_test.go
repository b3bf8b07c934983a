package cli

import (
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// serve logs each master that stops answering, with why, once, and once when it
// answers again.
func TestServeLogsMasterChanges(t *testing.T) {
	var l masterLog
	var b strings.Builder
	up := inspect.Master{Name: "m1", Up: true}
	down := inspect.Master{Name: "m1", Error: "dial tcp 127.0.0.1:1: connection refused", ErrorKind: errkind.Refused}
	for _, m := range []inspect.Master{up, down, down, up, up, {Name: "m1", Error: "no answer"}} {
		l.log(&b, []inspect.Master{m, {Name: "m2", Up: true}})
	}
	want := "redlockctl serve: master m1 down (refused): dial tcp 127.0.0.1:1: connection refused\n" +
		"redlockctl serve: master m1 answers again\n" +
		"redlockctl serve: master m1 down (other): no answer\n"
	if got := b.String(); got != want {
		t.Errorf("serve logged\n%s\nwant\n%s", got, want)
	}
}
