package inspect

import (
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/internal/exitcode"
)

// Summarize counts s's rows, masters and findings into s.Summary.
func Summarize(s *Snapshot) {
	sum := Summary{Findings: len(s.Findings)}
	CountRows(&sum, s.Resources)
	for i := range s.Masters {
		if s.Masters[i].Up {
			sum.MastersUp++
		}
		sum.Findings += len(s.Masters[i].Findings)
	}
	s.Summary = sum
}

// CountRows adds rows to sum's row counts.
func CountRows(sum *Summary, rows []Resource) {
	sum.Resources += len(rows)
	for i := range rows {
		if rows[i].Scope == locks.ScopeSingle {
			countSingle(&sum.SingleSummary, rows[i].State)
			continue
		}
		switch rows[i].State {
		case StateSemaphore:
			sum.Semaphore++
		case StateHeld:
			sum.Held++
		case StatePartial:
			sum.Partial++
		case StateSplit:
			sum.Split++
		case StateNoTTL:
			sum.NoTTL++
		case StateForeign:
			sum.Foreign++
		case StateFree:
			sum.Free++
		}
	}
}

// countSingle adds a single-instance row's state to sum.
func countSingle(sum *SingleSummary, state string) {
	switch state {
	case StateHeld:
		sum.Held++
	case StateNoTTL:
		sum.NoTTL++
	case StateForeign:
		sum.Foreign++
	case StateFree:
		sum.Free++
	case StateSemaphore:
		sum.Semaphore++
	}
}

// ExitCode maps a snapshot to the dump/doctor exit codes: 1 when fewer than a quorum
// of masters answered, 3 when there are findings, reportable rows or a master down,
// else 0.
func ExitCode(s *Snapshot) int {
	up := 0
	for i := range s.Masters {
		if s.Masters[i].Up {
			up++
		}
	}
	if up < s.Quorum {
		return exitcode.Failure
	}
	if up < len(s.Masters) {
		return exitcode.Findings
	}
	for _, f := range s.Findings {
		if f.Severity != SeverityInfo {
			return exitcode.Findings
		}
	}
	for i := range s.Masters {
		for _, f := range s.Masters[i].Findings {
			if f.Severity != SeverityInfo { // information alone is nothing to report
				return exitcode.Findings
			}
		}
	}
	for i := range s.Resources {
		if s.Resources[i].Reportable() {
			return exitcode.Findings
		}
	}
	return exitcode.OK
}
