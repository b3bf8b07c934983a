package inspect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Display widths of the table's free-text columns.
const (
	resourceWidth = 40
	ownerWidth    = 28
)

// MarshalJSON writes the node; a value that is not valid UTF-8 is also given in full
// as standard base64 in "value_b64" ("value" then carries a display form in which
// invalid bytes are U+FFFD), so binary values survive JSON without loss.
func (n Node) MarshalJSON() ([]byte, error) {
	type plain Node
	if utf8.ValidString(n.Value) {
		return json.Marshal(plain(n))
	}
	return json.Marshal(struct {
		plain
		ValueB64 string `json:"value_b64"`
	}{plain(n), base64.StdEncoding.EncodeToString([]byte(n.Value))})
}

// MarshalJSON writes the resource; "resource", "key" and "value" that are not valid
// UTF-8 are also given in full as base64 in "resource_b64", "key_b64", "value_b64".
func (r Resource) MarshalJSON() ([]byte, error) {
	type plain Resource
	if r.Anomalies == nil {
		r.Anomalies = []Anomaly{}
	}
	if r.Nodes == nil {
		r.Nodes = []Node{}
	}
	if utf8.ValidString(r.Resource) && utf8.ValidString(r.Key) && utf8.ValidString(r.Value) {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		plain
		ResourceB64 string `json:"resource_b64,omitempty"`
		KeyB64      string `json:"key_b64,omitempty"`
		ValueB64    string `json:"value_b64,omitempty"`
	}{plain(r), b64IfInvalid(r.Resource), b64IfInvalid(r.Key), b64IfInvalid(r.Value)})
}

// MarshalJSON writes the master with an empty (not null) findings list.
func (m Master) MarshalJSON() ([]byte, error) {
	type plain Master
	if m.Findings == nil {
		m.Findings = []Finding{}
	}
	return json.Marshal(plain(m))
}

func b64IfInvalid(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// WriteJSON writes s as one JSON object on one line (the `dump -o json` contract).
func WriteJSON(w io.Writer, s *Snapshot) error {
	c := *s
	if c.Masters == nil {
		c.Masters = []Master{}
	}
	if c.Resources == nil {
		c.Resources = []Resource{}
	}
	if c.Findings == nil {
		c.Findings = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(&c)
}

// WriteTable writes s for a terminal or a log: a header line, the masters, one row
// per resource, then findings and a summary. Values are escaped and truncated.
func WriteTable(w io.Writer, s *Snapshot) error {
	tw := &errWriter{w: w}
	writeHeader(tw, s)
	fmt.Fprintln(tw)
	writeMasters(tw, s)
	fmt.Fprintln(tw)
	t := newTable(tw)
	fmt.Fprintln(t, "RESOURCE\tSTATE\tOWNER\tHOLDERS\tVALIDITY\tSPREAD\tTOKEN\tANOMALIES")
	uncertain := false
	for i := range s.Resources {
		r := &s.Resources[i]
		state := r.State
		if r.Uncertain {
			state += "?"
			uncertain = true
		}
		owner := r.Owner
		if owner == "" && r.Value != "" {
			owner = `"` + Display(r.Value, ownerWidth-2) + `"`
		} else {
			owner = Display(owner, ownerWidth)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n",
			Display(r.Resource, resourceWidth), state, dash(owner), r.Holders, len(r.Nodes),
			validity(r), spread(r), token(r.Token), anomalies(r.Anomalies))
	}
	t.Flush()
	if len(s.Resources) == 0 {
		fmt.Fprintln(tw, "(no lock keys)")
	}
	if uncertain {
		fmt.Fprintln(tw, "?: masters that did not answer could change this verdict")
	}
	writeFindings(tw, s)
	writeSummary(tw, s)
	return tw.err
}

// WriteDoctor writes the masters and every finding with its fix (the doctor table).
func WriteDoctor(w io.Writer, s *Snapshot) error {
	tw := &errWriter{w: w}
	writeHeader(tw, s)
	fmt.Fprintln(tw)
	writeMasters(tw, s)
	n := len(s.Findings)
	for _, m := range s.Masters {
		n += len(m.Findings)
	}
	if n == 0 {
		fmt.Fprintln(tw, "\nno findings")
	}
	writeFindings(tw, s)
	return tw.err
}

func writeHeader(w io.Writer, s *Snapshot) {
	up := 0
	for _, m := range s.Masters {
		if m.Up {
			up++
		}
	}
	complete := "complete"
	if !s.Complete {
		complete = "INCOMPLETE"
	}
	fmt.Fprintf(w, "snapshot %s  quorum %d of %d  masters up %d/%d  %s\n",
		s.TakenAt.UTC().Format("2006-01-02T15:04:05.000Z"), s.Quorum, len(s.Masters), up, len(s.Masters), complete)
}

func writeMasters(w io.Writer, s *Snapshot) {
	t := newTable(w)
	fmt.Fprintln(t, "MASTER\tADDR\tUP\tRTT\tCLOCK OFFSET\tRATE\tUPTIME\tROLE\tAOF/FSYNC\tMAXMEM POLICY\tNOTE")
	for _, m := range s.Masters {
		if !m.Up {
			fmt.Fprintf(t, "%s\t%s\tDOWN\t-\t-\t-\t-\t-\t-\t-\t%s\n", Display(m.Name, 20), m.Addr, Display(m.Error, 60))
			continue
		}
		rate := "-"
		if m.ClockRatePPM != nil {
			rate = fmt.Sprintf("%+.0fppm", *m.ClockRatePPM)
		}
		var note []string
		if m.ClockJump {
			note = append(note, "clock jumped")
		}
		if m.Capped {
			note = append(note, "scan capped")
		}
		fmt.Fprintf(t, "%s\t%s\tup\t%.2fms\t%+.1fms ±%.1fms\t%s\t%s\t%s\t%s/%s\t%s\t%s\n",
			Display(m.Name, 20), m.Addr, m.RTTMs, m.ClockOffsetMs, m.ClockUncertaintyMs, rate,
			uptime(m.UptimeS), dash(m.Role), dash(m.AppendOnly), dash(m.AppendFsync), dash(m.MaxmemoryPolicy), strings.Join(note, ", "))
	}
	t.Flush()
}

func writeFindings(w io.Writer, s *Snapshot) {
	var all []Finding
	all = append(all, s.Findings...)
	for _, m := range s.Masters {
		all = append(all, m.Findings...)
	}
	if len(all) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFINDINGS")
	t := newTable(w)
	for _, f := range all {
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", f.Severity, dash(f.Master), f.Code, f.Message)
		fmt.Fprintf(t, "\t\t\tfix: %s\n", f.Fix)
	}
	t.Flush()
}

func writeSummary(w io.Writer, s *Snapshot) {
	m := s.Summary
	fmt.Fprintf(w, "\n%s: %d held, %d partial, %d split, %d no-ttl, %d foreign, %d free; %s\n",
		plural(m.Resources, "resource"), m.Held, m.Partial, m.Split, m.NoTTL, m.Foreign, m.Free, plural(m.Findings, "finding"))
}

// plural returns "1 resource", "2 resources".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Escape returns s printable on one line of a terminal: invalid bytes as \xNN, control
// and other non-printable runes as Go escapes, and the backslash doubled, so that the
// escaped form of different strings is never the same.
func Escape(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return escape(s, -1)
		}
	}
	return s
}

// Display is Escape truncated to width runes, ending in "..." when cut.
func Display(s string, width int) string {
	out := escape(s, 4*width+8) // enough to fill the column
	if utf8.RuneCountInString(out) <= width {
		return out
	}
	if width <= 3 {
		return string([]rune(out)[:width])
	}
	return string([]rune(out)[:width-3]) + "..."
}

// escape escapes s, stopping once the output passes limit bytes (limit < 0: all of s).
func escape(s string, limit int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case !unicode.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += size
		if limit >= 0 && b.Len() > limit {
			break
		}
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func validity(r *Resource) string {
	if r.State != StateHeld {
		return "-"
	}
	return short(time.Duration(r.ValidityMs) * time.Millisecond)
}

func spread(r *Resource) string {
	if r.Value == "" {
		return "-"
	}
	return short(time.Duration(r.TTLSpreadMs) * time.Millisecond)
}

// short formats a duration in one compact unit: 850ms, 12.3s, 4m05s, 2h10m.
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

func uptime(s int64) string {
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return short(time.Duration(s) * time.Second)
}

func token(t int64) string {
	if t == 0 {
		return "-"
	}
	return strconv.FormatInt(t, 10)
}

func anomalies(as []Anomaly) string {
	if len(as) == 0 {
		return "-"
	}
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.Code
		if a.Master != "" {
			parts[i] += "@" + a.Master
		}
	}
	return strings.Join(parts, ",")
}

// table aligns tab-separated cells and trims the padding at the end of each line.
type table struct {
	tw  *tabwriter.Writer
	buf bytes.Buffer
	w   io.Writer
}

func newTable(w io.Writer) *table {
	t := &table{w: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

func (t *table) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush writes the aligned lines.
func (t *table) Flush() {
	t.tw.Flush()
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		io.WriteString(t.w, strings.TrimRight(line, " \n")+"\n")
	}
	t.buf.Reset()
}

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Filter returns a copy of s with only the rows whose resource name matches glob
// (Redis glob syntax: * ? [abc] [^a] \x; "" matches all) and, when onlyReportable, only
// rows with anomalies or a split/no-ttl/foreign state; the summary is recounted.
func Filter(s *Snapshot, glob string, onlyReportable bool) *Snapshot {
	c := *s
	c.Resources = nil
	for i := range s.Resources {
		r := &s.Resources[i]
		if glob != "" && !MatchGlob(glob, r.Resource) {
			continue
		}
		if onlyReportable && !r.Reportable() {
			continue
		}
		c.Resources = append(c.Resources, *r)
	}
	if c.Resources == nil {
		c.Resources = []Resource{}
	}
	summarize(&c)
	return &c
}

// CheckGlob reports what is wrong with a glob pattern (* ? [abc] [^a-z] \x), or nil.
func CheckGlob(pattern string) error {
	if pattern == "" {
		return errors.New("empty pattern")
	}
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return fmt.Errorf("pattern %q: '[' at %d is never closed", pattern, i)
			}
			i += end + 1
		}
	}
	return nil
}

// MatchGlob reports whether name matches the Redis-style glob pattern.
func MatchGlob(pattern, name string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 0 && pattern[0] == '*' {
				pattern = pattern[1:]
			}
			if pattern == "" {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if MatchGlob(pattern, name[i:]) {
					return true
				}
			}
			return false
		case '?':
			if name == "" {
				return false
			}
			_, size := utf8.DecodeRuneInString(name)
			pattern, name = pattern[1:], name[size:]
		case '[':
			if name == "" {
				return false
			}
			end := strings.IndexByte(pattern[1:], ']')
			if end < 0 {
				if name[0] != '[' {
					return false
				}
				pattern, name = pattern[1:], name[1:]
				continue
			}
			set := pattern[1 : end+1]
			neg := strings.HasPrefix(set, "^")
			if neg {
				set = set[1:]
			}
			c := name[0]
			in := false
			for i := 0; i < len(set); i++ {
				if i+2 < len(set) && set[i+1] == '-' {
					if set[i] <= c && c <= set[i+2] {
						in = true
					}
					i += 2
				} else if set[i] == c {
					in = true
				}
			}
			if in == neg {
				return false
			}
			pattern, name = pattern[end+2:], name[1:]
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if name == "" || name[0] != pattern[0] {
				return false
			}
			pattern, name = pattern[1:], name[1:]
		}
	}
	return name == ""
}
