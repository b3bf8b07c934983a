package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/live"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// Context is what a format may need besides the snapshot: the configured masters and
// resources (in config order), and how long the poll took.
type Context struct {
	Masters, Resources []string
	Took               time.Duration
}

// Format is one output format of dump and doctor (`-o NAME`). The table of formats
// drives the -o help text, its validation and the dispatch: a new format is one
// Register call.
type Format struct {
	Name string
	Help string // a few words for the -o help text, e.g. "one JSON object per line"
	// Stream writes a poll's rows as they are built (dump).
	Stream func(w io.Writer, st *poll.Stream, c Context) error
	// Snapshot writes a snapshot built whole (dump --watch when rows are carried from
	// an earlier poll); nil: the format does not take --watch.
	Snapshot func(w io.Writer, s *inspect.Snapshot, c Context) error
	// Doctor writes doctor's report; nil: doctor does not take the format.
	Doctor func(w io.Writer, s *inspect.Snapshot) error
	// Between is written between two --watch snapshots.
	Between string
	// Event writes one lifecycle event of `events`; nil: events does not take the
	// format. EventHeader, when set, writes what comes before the first event.
	Event       func(w io.Writer, e live.Event, c Context) error
	EventHeader func(w io.Writer, c Context) error
}

var (
	formatsMu sync.RWMutex
	formats   []Format
)

// Register adds f to the table (at init: report registers table, json and ndjson,
// package export registers prometheus). A name registered twice panics.
func Register(f Format) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	for _, g := range formats {
		if g.Name == f.Name {
			panic(fmt.Sprintf("report: format %q registered twice", f.Name))
		}
	}
	formats = append(formats, f)
}

// Lookup returns the format named name.
func Lookup(name string) (Format, bool) {
	formatsMu.RLock()
	defer formatsMu.RUnlock()
	for _, f := range formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// Formats returns the registered formats, in registration order.
func Formats() []Format {
	formatsMu.RLock()
	defer formatsMu.RUnlock()
	return append([]Format(nil), formats...)
}

// FormatNames lists the formats a command takes ("dump" or "doctor"), as "table, json,
// ndjson or prometheus".
func FormatNames(command string) string {
	var names []string
	for _, f := range Formats() {
		if command == "doctor" && f.Doctor == nil || command == "events" && f.Event == nil {
			continue
		}
		names = append(names, f.Name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// FormatHelp is the -o help text of dump and doctor, from the table.
func FormatHelp() string {
	var parts []string
	for _, f := range Formats() {
		p := f.Name
		if f.Help != "" {
			p += " (" + f.Help + ")"
		}
		if f.Doctor == nil {
			p += " [dump only]"
		}
		parts = append(parts, p)
	}
	return "output: " + strings.Join(parts, ", ")
}

func init() {
	table := func(w io.Writer, s *inspect.Snapshot, _ Context) error { return WriteTable(w, s) }
	jsonWhole := func(w io.Writer, s *inspect.Snapshot, _ Context) error { return WriteJSON(w, s) }
	jsonStream := func(w io.Writer, st *poll.Stream, _ Context) error { return WriteJSONStream(w, st) }
	Register(Format{Name: "table", Help: "aligned columns",
		Stream:   func(w io.Writer, st *poll.Stream, _ Context) error { return WriteTableStream(w, st) },
		Snapshot: table, Doctor: WriteDoctor, Between: "\n",
		Event: writeEventRow, EventHeader: writeEventHeader})
	Register(Format{Name: "json", Help: "one JSON object per snapshot (events: per event and line)",
		Stream: jsonStream, Snapshot: jsonWhole, Doctor: WriteJSON, Event: writeEventJSON})
	Register(Format{Name: "ndjson", Help: "the same, named for --watch streams",
		Stream: jsonStream, Snapshot: jsonWhole, Doctor: WriteJSON, Event: writeEventJSON})
}
