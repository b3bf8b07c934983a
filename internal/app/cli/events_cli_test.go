package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// events writes through the formats' registry, as dump does: table (with a header
// that says what its MASTERS column counts), json and ndjson (one object per line);
// a format without events is refused, naming those that have them.
func TestEventsFormats(t *testing.T) {
	ms := redistest.StartN(t, 5, redistest.Options{})
	masters := strings.Join(redistest.Addrs(ms), ",")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, format := range []string{"table", "json", "ndjson"} {
		var out, errOut bytes.Buffer
		done := make(chan int)
		go func() {
			done <- run([]string{"events", "--masters", masters, "-o", format, "--duration", "2500ms"}, &out, &errOut)
		}()
		time.Sleep(800 * time.Millisecond) // the feed is up
		resource := "ev-" + format
		if code, o, e := runOut("acquire", resource, "--masters", masters, "--restart-guard", "0s", "--ttl", "20s", "-o", "json"); code != exitOK {
			t.Fatalf("acquire: exit %d\n%s%s", code, o, e)
		}
		code := <-done
		// A span the feed handled late (stalled: a busy machine) may come first; it is
		// not what this test is about.
		var lines []string
		for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if !strings.Contains(l, "stalled") {
				lines = append(lines, l)
			}
		}
		if code != exitOK || len(lines) < 1+boolInt(format == "table") {
			t.Fatalf("events -o %s: exit %d\n%s%s", format, code, out.String(), errOut.String())
		}
		switch format {
		case "table":
			header := regexp.MustCompile(`^TIME \(UTC\)\s+EVENT\s+RESOURCE\s+MASTERS \(holding it when seen, of 5\)  DETAILS$`)
			row := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{6}  acquired\s+` + resource + `\s+[345] of 5  \(tracking\)$`)
			if !header.MatchString(lines[0]) || !row.MatchString(lines[1]) {
				t.Errorf("events table:\n%s", out.String())
			}
		default:
			var e struct{ Event, Resource string }
			if err := json.Unmarshal([]byte(lines[0]), &e); err != nil || e.Event != "acquired" || e.Resource != resource {
				t.Errorf("events -o %s: %v %+v\n%s", format, err, e, out.String())
			}
		}
	}
	code, out, errOut := runOut("events", "--masters", masters, "-o", "prometheus")
	if code != exitUsage || out != "" || !strings.Contains(errOut, `redlockctl events: -o "prometheus": want table, json or ndjson`) {
		t.Errorf("events -o prometheus: exit %d\n%s%s", code, out, errOut)
	}
}
