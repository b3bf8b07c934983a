package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// A server's words (an error reply, a role) carrying terminal escapes are printed
// escaped by dump's table and by doctor, FINDINGS included: an OSC sequence would set
// the terminal's title, OSC 52 write its clipboard.
func TestFindingsEscapeServerText(t *testing.T) {
	hostile := "ERR hostile \x1b]0;pwned\x07 \x1b]52;c;cHduZWQ=\x07 \x9b2J"
	s := &inspect.Snapshot{TakenAt: time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC), Quorum: 2,
		Masters: []inspect.Master{
			{Name: "m1", Addr: "10.0.0.1:6379", Up: true, Role: "master\x1b[31m", AppendOnly: "yes", AppendFsync: "always", MaxmemoryPolicy: "noeviction",
				Findings: []inspect.Finding{{Code: "no-time", Severity: inspect.SeverityWarn, Master: "m1",
					Message: "m1 refused TIME (" + hostile + "): its clock cannot be checked", Fix: "allow TIME (ACL: +time)"}}},
			{Name: "m2", Addr: "10.0.0.2:6379", Error: "TIME: " + hostile, ErrorKind: errkind.Other,
				Findings: []inspect.Finding{{Code: "down", Severity: inspect.SeverityCrit, Master: "m2",
					Message: "m2 (10.0.0.2:6379) did not answer (other): TIME: " + hostile, Fix: errkind.Other.Hint()}}},
		},
		Findings: []inspect.Finding{{Code: "quorum", Severity: inspect.SeverityCrit, Message: "1 of 2 masters up: " + hostile, Fix: "fix \x1b]0;x\x07"}},
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"dump":   func(b *bytes.Buffer) error { return WriteTable(b, s) },
		"doctor": func(b *bytes.Buffer) error { return WriteDoctor(b, s) },
	} {
		var out bytes.Buffer
		if err := write(&out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if i := strings.IndexAny(text, "\x1b\x07\u009b"); i >= 0 {
			t.Errorf("%s: a raw control character at byte %d:\n%q", name, i, text)
		}
		findings := text[strings.Index(text, "FINDINGS"):]
		for _, want := range []string{`ERR hostile \x1b]0;pwned\a \x1b]52;c;cHduZWQ=\a \x9b2J`, `fix \x1b]0;x\a`} {
			if !strings.Contains(findings, want) {
				t.Errorf("%s: FINDINGS lack the escaped text %q:\n%s", name, want, findings)
			}
		}
	}
}
