package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/redlockctl/redlockctl/inspect/report"
)

// clean returns s safe to print on a terminal (report.Escape): printable UTF-8 is
// kept, anything else (control bytes, escape sequences, invalid UTF-8) is shown
// Go-escaped, so a lock value can never drive the operator's terminal.
func clean(s string) string { return report.Escape(s) }

// quote returns s as a double-quoted, escaped string for the detail and dialogs.
func quote(s string) string { return strconv.Quote(s) }

// fmtMs formats a duration in milliseconds compactly: 850ms, 12.3s, 4m05s, 2h03m.
func fmtMs(ms int64) string {
	neg := ms < 0
	if neg {
		ms = -ms
	}
	var s string
	switch {
	case ms < 1000:
		s = strconv.FormatInt(ms, 10) + "ms"
	case ms < 60_000:
		s = strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
	case ms < 3_600_000:
		s = fmt.Sprintf("%dm%02ds", ms/60_000, ms%60_000/1000)
	case ms < 100*3_600_000:
		s = fmt.Sprintf("%dh%02dm", ms/3_600_000, ms%3_600_000/60_000)
	default:
		s = fmt.Sprintf("%dd", ms/86_400_000)
	}
	if neg {
		return "-" + s
	}
	return s
}

// fmtDur formats a time.Duration like fmtMs.
func fmtDur(d time.Duration) string { return fmtMs(d.Milliseconds()) }

// fmtUptime formats seconds of uptime: 45s, 12m, 3h04m, 5d02h.
func fmtUptime(s int64) string {
	switch {
	case s < 0:
		return "?"
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
	}
}

// fmtPTTL formats one master's PTTL for a table cell.
func fmtPTTL(ms int64) string {
	switch {
	case ms == -1:
		return "no-ttl"
	case ms < 0:
		return "-"
	default:
		return fmtMs(ms)
	}
}

// fit pads or truncates s (which may hold ANSI styling) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}

// fitRight right-aligns s in w cells, truncating when needed.
func fitRight(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return strings.Repeat(" ", w-sw) + s
}

// wrap splits plain (unstyled) s into lines of at most w cells.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	var out []string
	for ansi.StringWidth(s) > w {
		head := ansi.Truncate(s, w, "")
		if head == "" {
			break
		}
		// Break after the last space of the line, where there is one past its first
		// third: words stay whole, and the space stays (at the end of the line), so
		// that the lines joined are the text.
		if i := strings.LastIndexByte(head, ' '); i >= len(head)/3 && i < len(head)-1 {
			head = head[:i+1]
		}
		out = append(out, head)
		s = s[len(head):]
	}
	return append(out, s)
}
