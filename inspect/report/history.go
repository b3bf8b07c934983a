package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redlockctl/redlockctl/history"
)

// historyTime is how the history table writes an instant: UTC, to the millisecond.
const historyTime = "2006-01-02T15:04:05.000Z"

// writeHistoryTable writes a history answer as aligned columns: who held what at
// an instant (or why that is unknown), or the lifecycles of a window and the gaps
// in it. Text from a server (values, owners, reasons) is escaped.
func writeHistoryTable(w io.Writer, r history.Response) error {
	var b strings.Builder
	var ls []history.Lifecycle
	var gaps []history.Mark
	switch {
	case r.Answer != nil && r.Answer.Unknown != "":
		fmt.Fprintf(&b, "at %s: unknown: %s\n", r.Answer.At.UTC().Format(historyTime), Escape(r.Answer.Unknown))
		_, err := io.WriteString(w, b.String())
		return err
	case r.Answer != nil:
		ls = r.Answer.Holders
		fmt.Fprintf(&b, "at %s: %d held\n", r.Answer.At.UTC().Format(historyTime), len(ls))
	case r.Result != nil:
		ls, gaps = r.Result.Lifecycles, r.Result.Gaps
		more := ""
		if r.Result.Truncated {
			more = " (the first; --limit cut the rest)"
		}
		fmt.Fprintf(&b, "%s%s\n", plural(len(ls), "lifecycle"), more)
	}
	if len(ls) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RESOURCE\tOWNER\tVALUE\tACQUIRED (UTC)\tENDED (UTC)\tEND\tHOLD\tMARGIN\tEXT\tMASTERS")
		for _, l := range ls {
			acquired := l.AcquiredAt.UTC().Format(historyTime)
			if l.Unseen {
				acquired = "<=" + acquired // held by then, acquired unseen
			}
			ended, end := "-", l.End
			if !l.EndedAt.IsZero() {
				ended = l.EndedAt.UTC().Format(historyTime)
			}
			if l.End == history.Unknown {
				ended = "<=" + ended
			}
			if end == history.Held {
				end = "held"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d/%d\n", Escape(l.Resource), Escape(dash(l.Owner)), Escape(dash(l.Value)),
				acquired, ended, end, ms(l.HoldMs()), ms(l.MarginMs), l.Extensions, l.Masters, l.Quorum)
		}
		tw.Flush()
	}
	for _, g := range gaps {
		to := "now (still cut)"
		if !g.To.IsZero() {
			to = g.To.UTC().Format(historyTime)
		}
		what := "feed gap on " + Escape(g.Master)
		if g.Kind != history.MarkGap {
			what = "nothing recorded"
		}
		fmt.Fprintf(&b, "%s from %s to %s: lifecycles there may be missing, and those it cut end unknown\n", what, g.At.UTC().Format(historyTime), to)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	return (time.Duration(*v * float64(time.Millisecond))).Round(time.Millisecond).String()
}

// writeHistoryJSON writes the answer as one JSON object.
func writeHistoryJSON(w io.Writer, r history.Response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeHistoryNDJSON writes one JSON object a line: each lifecycle, then each gap
// of a window (kind "gap" or "not-recorded"); for an instant that is unknown, one
// object {"at", "unknown"}.
func writeHistoryNDJSON(w io.Writer, r history.Response) error {
	enc := json.NewEncoder(w)
	switch {
	case r.Answer != nil && r.Answer.Unknown != "":
		return enc.Encode(struct {
			At      string `json:"at"`
			Unknown string `json:"unknown"`
		}{r.Answer.At.UTC().Format(history.TimeFormat), r.Answer.Unknown})
	case r.Answer != nil:
		for _, l := range r.Answer.Holders {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
	case r.Result != nil:
		for _, l := range r.Result.Lifecycles {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
		for _, g := range r.Result.Gaps {
			if err := enc.Encode(g); err != nil {
				return err
			}
		}
	}
	return nil
}
