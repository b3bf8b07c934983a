package cli

import (
	"os"
	"strings"
	"testing"
)

// release --force --any-value obeys the plan's rule (admin.AnyValueRefusal): on a row
// every master holds with one value, it is refused with the reason, nothing is sent
// or audited, and the key stays; once a master holds another value, the same command
// deletes each master's observed value.
func TestReleaseAnyValueObeysThePlanRule(t *testing.T) {
	c := newAdminCLI(t, 3)
	for i := range 3 {
		c.set(t, i, "nightly", "w1#aa")
	}
	code, out, errs := c.run(t, "", "release", "nightly", "--force", "--any-value", "--yes")
	if code != exitFailure {
		t.Fatalf("--any-value on a held row: exit %d, want %d\n%s%s", code, exitFailure, out, errs)
	}
	for _, want := range []string{`any value refused for "nightly"`, "state held", `"w1#aa"`, "no other value to delete", "without --any-value"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "DELETE") || !strings.Contains(errs, "nothing will be deleted") {
		t.Errorf("the refused plan shows a delete:\n%s", errs)
	}
	for i := range 3 {
		if v := c.get(t, i, "nightly"); v != "w1#aa" {
			t.Fatalf("master %d holds %q after a refused --any-value", i, v)
		}
	}
	if _, err := os.Stat(c.audit); !os.IsNotExist(err) {
		t.Fatalf("a refused --any-value was audited: %v", err)
	}

	// A stray value on the third master: --any-value is offered and deletes both.
	c.set(t, 2, "nightly", "w2#bb")
	code, out, errs = c.run(t, "", "release", "nightly", "--force", "--any-value", "--yes", "-o", "json")
	if r := adminDecode(t, out); code != exitOK || r.Action != "force-release-any" || r.Done != 3 {
		t.Fatalf("--any-value with a stray value: exit %d %+v\n%s", code, r, errs)
	}
	for i := range 3 {
		if v := c.get(t, i, "nightly"); v != "" {
			t.Fatalf("master %d still holds %q", i, v)
		}
	}
}
