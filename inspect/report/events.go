package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// EventFormats are the formats `events` writes: one event per line.
var EventFormats = []string{"table", "ndjson"}

// WriteEvent writes one live event as a line in format ("table" or "ndjson"). Text
// from a server (values, owners, reasons) is escaped in the table; JSON escapes it.
func WriteEvent(w io.Writer, format string, e live.Event) error {
	if format == "ndjson" {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		b = append(b, '\n')
		_, err = w.Write(b)
		return err
	}
	at := e.At.UTC().Format("15:04:05.000000")
	switch e.Event {
	case live.Gap:
		_, err := fmt.Fprintf(w, "%s  %-14s %s  unseen from %s: %s\n", at, e.Event, Escape(e.Master), e.From.UTC().Format("15:04:05.000"), Escape(e.Reason))
		return err
	case live.Resync, live.Degraded:
		_, err := fmt.Fprintf(w, "%s  %-14s %s  %s\n", at, e.Event, Escape(e.Master), Escape(e.Reason))
		return err
	}
	line := fmt.Sprintf("%s  %-14s %-24s %d/%d", at, e.Event, Escape(e.Resource), e.Masters, e.Quorum)
	if e.HeldMs != nil {
		line += "  held " + msText(*e.HeldMs)
	}
	if e.MarginMs != nil {
		line += "  margin " + msText(*e.MarginMs)
	}
	if e.TTLMs > 0 {
		line += "  ttl " + msText(float64(e.TTLMs))
	}
	switch {
	case e.Owner != "":
		line += "  owner " + Escape(e.Owner)
	case e.Value != "":
		line += "  value " + Escape(e.Value)
	}
	if e.Library != "" {
		line += "  " + Escape(e.Library)
	}
	_, err := io.WriteString(w, line+"  ("+e.Source+")\n")
	return err
}

// msText writes a duration in ms compactly: 2.1ms, 340ms, 12.5s.
func msText(v float64) string {
	switch {
	case v >= 10000 || v <= -10000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + "s"
	case v >= 100 || v <= -100:
		return strconv.FormatFloat(v, 'f', 0, 64) + "ms"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "ms"
}
