package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/redlockctl/redlockctl/inspect/live"
)

// WriteEvent writes one live event as a line in format ("table" or "ndjson"), as the
// console's activity pane shows it: the masters that held the value when it was seen
// over the quorum. Text from a server (values, owners, reasons) is escaped in the
// table; JSON escapes it. `events` writes through the formats' Event instead.
func WriteEvent(w io.Writer, format string, e live.Event) error {
	if format == "ndjson" {
		return writeEventJSON(w, e, Context{})
	}
	return writeEventLine(w, e, fmt.Sprintf("%d/%d", e.Masters, e.Quorum))
}

// writeEventJSON writes e as one JSON object and a newline (json and ndjson).
func writeEventJSON(w io.Writer, e live.Event, _ Context) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// eventColumns are the widths of the events table's time, event and resource columns.
const eventColumns = "%-15s  %-14s %-24s %s"

// writeEventHeader writes the events table's header: its columns, and what the
// MASTERS column counts.
func writeEventHeader(w io.Writer, c Context) error {
	_, err := fmt.Fprintf(w, eventColumns+"\n", "TIME (UTC)", "EVENT", "RESOURCE", fmt.Sprintf("MASTERS (holding it when seen, of %d)  DETAILS", len(c.Masters)))
	return err
}

// writeEventRow writes e as a line of the events table: MASTERS is how many of the
// configured masters held the value when the event was seen.
func writeEventRow(w io.Writer, e live.Event, c Context) error {
	return writeEventLine(w, e, fmt.Sprintf("%d of %d", e.Masters, len(c.Masters)))
}

// writeEventLine writes e as one table line, its masters column as masters.
func writeEventLine(w io.Writer, e live.Event, masters string) error {
	at := e.At.UTC().Format("15:04:05.000000")
	switch e.Event {
	case live.Gap:
		_, err := fmt.Fprintf(w, "%s  %-14s %s  unseen from %s: %s\n", at, e.Event, Escape(e.Master), e.From.UTC().Format("15:04:05.000"), Escape(e.Reason))
		return err
	case live.Stalled:
		_, err := fmt.Fprintf(w, "%s  %-14s %s  late from %s: %s\n", at, e.Event, "feed", e.From.UTC().Format("15:04:05.000"), Escape(e.Reason))
		return err
	case live.Resync, live.Degraded:
		_, err := fmt.Fprintf(w, "%s  %-14s %s  %s\n", at, e.Event, Escape(e.Master), Escape(e.Reason))
		return err
	}
	line := fmt.Sprintf("%s  %-14s %-24s %s", at, e.Event, Escape(e.Resource), masters)
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
