package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// The measured case: max_keys 2 and six lock keys on one master. Every output says the
// read is capped: the JSON (complete false, the master capped), the table's header and
// footer, the findings, and the exit code.
func TestDumpSaysCapped(t *testing.T) {
	ms := redistest.StartN(t, 3, redistest.Options{AOF: true})
	for i := range 6 {
		mustDo(t, ms[0], "SET", fmt.Sprintf("job:%d", i), fmt.Sprintf("w:%d#%032x", i, i), "PX", 60000)
	}
	cfg := fmt.Sprintf("[inspect]\nmax_keys = 2\n")
	for i, m := range ms {
		cfg += fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\n", i+1, m.Addr)
	}
	path := writeConfig(t, cfg)
	code, out, errOut := dump(t, "--config", path, "-o", "json")
	var s struct {
		Complete bool `json:"complete"`
		Masters  []struct {
			Name   string `json:"name"`
			Capped bool   `json:"capped"`
		} `json:"masters"`
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	if code != exitFindings || s.Complete || !s.Masters[0].Capped || s.Masters[1].Capped || len(s.Resources) != 2 {
		t.Fatalf("exit %d, complete %v, masters %+v, %d rows; want exit 3, incomplete, m1 capped, 2 rows\n%s", code, s.Complete, s.Masters, len(s.Resources), errOut)
	}
	code, out, _ = dump(t, "--config", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitFindings || !strings.Contains(lines[0], "INCOMPLETE") || !strings.Contains(out, "scan-capped") ||
		!strings.HasPrefix(lines[len(lines)-1], "INCOMPLETE: m1 has more matching keys than max_keys") {
		t.Fatalf("table (exit %d) does not say capped in its header, findings and footer:\n%s", code, out)
	}
}
