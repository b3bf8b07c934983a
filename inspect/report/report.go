// Package report writes snapshots for people and scripts: the dump table, the doctor
// table and the JSON/NDJSON contract of `dump -o json`. It only formats what it is given:
// it never talks to a server, and every value it prints is escaped so that no byte from
// a master can drive the terminal.
package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/internal/errkind"
)

// Display widths of the table's free-text columns.
const (
	resourceWidth = 40
	ownerWidth    = 28
)

// WriteTable writes s for a terminal or a log: a header line, the masters, one row
// per resource, then findings and a summary. Values are escaped and truncated.
func WriteTable(w io.Writer, s *inspect.Snapshot) error {
	return writeTable(w, s, snapshotRows(s.Resources, rowChunk))
}

// WriteTableStream writes st as WriteTable writes the same snapshot with its rows,
// byte for byte, building the rows while it writes them (twice: Stream.Each once for
// the column widths, once for the lines).
func WriteTableStream(w io.Writer, st *poll.Stream) error {
	return writeTable(w, st.Snapshot, st.Each)
}

func writeTable(w io.Writer, s *inspect.Snapshot, src rowSource) error {
	tw := &errWriter{w: w}
	writeHeader(tw, s)
	fmt.Fprintln(tw)
	writeMasters(tw, s)
	fmt.Fprintln(tw)
	n, uncertain, err := writeResources(tw, src)
	if err != nil {
		return err
	}
	if n == 0 {
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
func WriteDoctor(w io.Writer, s *inspect.Snapshot) error {
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

func writeHeader(w io.Writer, s *inspect.Snapshot) {
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
	slow := ""
	if s.Slow {
		slow = fmt.Sprintf("  SLOW poll %s (longer than poll_interval; masters answered)", (time.Duration(s.PollMs * float64(time.Millisecond))).Round(time.Millisecond))
	}
	config := ""
	if s.Config != "" {
		config = "  config " + Escape(s.Config)
	}
	fmt.Fprintf(w, "snapshot %s  quorum %d of %d  masters up %d/%d  %s%s%s\n",
		s.TakenAt.UTC().Format("2006-01-02T15:04:05.000Z"), s.Quorum, len(s.Masters), up, len(s.Masters), complete, slow, config)
}

func writeMasters(w io.Writer, s *inspect.Snapshot) {
	t := newTable(w)
	fmt.Fprintln(t, "MASTER\tADDR\tUP\tRTT\tCLOCK OFFSET\tRATE\tUPTIME\tROLE\tAOF/FSYNC\tMAXMEM POLICY\tNOTE")
	for _, m := range s.Masters {
		writeMaster(t, Display(m.Name, 20), m)
		for i, sh := range m.Shards { // a cluster: one line per shard master below it
			writeMaster(t, fmt.Sprintf("  shard %d", i+1), sh)
		}
	}
	t.Flush()
}

// writeMaster writes one line of the masters table: a master, or a cluster's shard.
func writeMaster(t io.Writer, name string, m inspect.Master) {
	var note []string
	switch {
	case m.Via == "sentinel":
		note = append(note, "via sentinel "+Display(m.SentinelMasterName, 30))
	case m.Via == "cluster":
		note = append(note, fmt.Sprintf("cluster, %d shards", len(m.Shards)))
	case m.Slots != "":
		note = append(note, "slots "+m.Slots)
	}
	if m.Incomplete != "" {
		note = append(note, "incomplete")
	}
	if !m.Up {
		note = append(note, Display(errkind.Describe(m.ErrorKind, m.Error), 60))
		fmt.Fprintf(t, "%s\t%s\tDOWN\t-\t-\t-\t-\t-\t-\t-\t%s\n", name, m.Addr, strings.Join(note, ", "))
		return
	}
	rate := "-"
	if m.ClockRatePPM != nil {
		rate = fmt.Sprintf("%+.0fppm", *m.ClockRatePPM)
	}
	if m.ClockJump {
		note = append(note, "clock jumped")
	}
	if m.Capped {
		note = append(note, "scan capped")
	}
	// Role and settings are the server's words (INFO, CONFIG GET): escaped.
	fmt.Fprintf(t, "%s\t%s\tup\t%.2fms\t%+.1fms ±%.1fms\t%s\t%s\t%s\t%s/%s\t%s\t%s\n",
		name, m.Addr, m.RTTMs, m.ClockOffsetMs, m.ClockUncertaintyMs, rate,
		inspect.Uptime(m.UptimeS), dash(Display(m.Role, 20)), dash(Display(m.AppendOnly, 20)), dash(Display(m.AppendFsync, 20)),
		dash(Display(m.MaxmemoryPolicy, 30)), strings.Join(note, ", "))
}

func writeFindings(w io.Writer, s *inspect.Snapshot) {
	var all []inspect.Finding
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
		// A message quotes what a server said (an error text, a role): escaped, as
		// everywhere else, so that it cannot drive the terminal.
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", Escape(f.Severity), dash(Escape(f.Master)), Escape(f.Code), Escape(f.Message))
		fmt.Fprintf(t, "\t\t\tfix: %s\n", Escape(f.Fix))
	}
	t.Flush()
}

func writeSummary(w io.Writer, s *inspect.Snapshot) {
	// Every row is counted once, by its state: a single-instance lock (judged on its
	// own master) as well, and said apart.
	m, one := s.Summary, s.Summary.SingleSummary
	counts := fmt.Sprintf("%d held, %d partial, %d split, %d no-ttl, %d foreign, %d free",
		m.Held+one.Held, m.Partial, m.Split, m.NoTTL+one.NoTTL, m.Foreign+one.Foreign, m.Free+one.Free)
	if sem := m.Semaphore + one.Semaphore; sem > 0 {
		counts += fmt.Sprintf(", %d semaphore", sem)
	}
	if singles := one.Held + one.NoTTL + one.Foreign + one.Free + one.Semaphore; singles > 0 {
		counts += fmt.Sprintf(" (%d of them single-instance)", singles)
	}
	fmt.Fprintf(w, "\n%s: %s; %s\n", plural(m.Resources, "resource"), counts, plural(m.Findings, "finding"))
	// A master that answered but was not read whole leaves rows out: said last, where a
	// reader of the counts looks (masters that did not answer are in FINDINGS).
	for _, ms := range s.Masters {
		switch {
		case ms.Up && ms.Capped:
			fmt.Fprintf(w, "INCOMPLETE: %s has more matching keys than max_keys: rows are missing\n", Escape(ms.Name))
		case ms.Up && ms.Incomplete != "":
			fmt.Fprintf(w, "INCOMPLETE: %s: %s\n", Escape(ms.Name), Escape(ms.Incomplete))
		}
	}
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
	if plainASCII(s) { // the usual case, without an allocation
		if len(s) <= width {
			return s
		}
		if width <= 3 {
			return s[:max(width, 0)]
		}
		return s[:width-3] + "..."
	}
	out := escape(s, 4*width+8) // enough to fill the column
	if utf8.RuneCountInString(out) <= width {
		return out
	}
	if width <= 3 {
		return string([]rune(out)[:width])
	}
	return string([]rune(out)[:width-3]) + "..."
}

// plainASCII reports whether s is printable ASCII without a backslash (what Escape
// returns unchanged).
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
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
