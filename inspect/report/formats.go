package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/redlockctl/redlockctl/history"
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

// Format is one output format (`-o NAME`) with its writer for each command that takes
// it. The table of formats drives every command's -o help text, its validation and the
// dispatch: a new format is one file that registers it (Register), and a package above
// report that owns a command's result adds its writer to a format (Extend).
type Format struct {
	Name string
	Help string // a few words for dump's and doctor's -o help, e.g. "one JSON object per line"
	// Stream writes a poll's rows as they are built (dump); nil: dump does not take
	// the format.
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
	// History writes an answer of `history`; nil: history does not take the format.
	History func(w io.Writer, r history.Response) error
	// Action writes the result of an admin action (acquire, extend, release) on w,
	// and what a person should read beside it on notes; nil: the admin commands do
	// not take the format.
	Action func(w, notes io.Writer, r Action) error
	// Text says the format is read by a person: commands write their progress notes
	// on stderr beside it (acquire --hold says what it does); formats that programs
	// read get none.
	Text bool
	// Alerts and Dashboard are the files serve prints and exits with
	// (--print-alerts, --print-dashboard) in this format; nil: not in this format.
	Alerts, Dashboard *File
}

// Action is the result of an admin action as the formats take it. Package admin's
// result implements it (admin sits above report): the JSON formats marshal it, and it
// writes its own text.
type Action interface {
	json.Marshaler
	// WriteText writes the result for a person on w: what was done, then a line per
	// master. An error the lines do not say goes to notes.
	WriteText(w, notes io.Writer) error
}

// File is a file serve prints in one format (--print-alerts, --print-dashboard).
type File struct {
	Help    string // a few words for serve's -o help ("" for none)
	Default bool   // printed when -o is not given
	Write   func(w io.Writer) error
}

// The commands whose -o the table serves (FormatsOf, FormatNames, Choose).
const (
	CmdDump           = "dump"
	CmdDoctor         = "doctor"
	CmdEvents         = "events"
	CmdHistory        = "history"
	CmdAcquire        = "acquire"
	CmdExtend         = "extend"
	CmdRelease        = "release"
	CmdPrintAlerts    = "--print-alerts"
	CmdPrintDashboard = "--print-dashboard"
)

// Commands lists every command whose -o the table serves.
func Commands() []string {
	return []string{CmdDump, CmdDoctor, CmdEvents, CmdHistory, CmdAcquire, CmdExtend, CmdRelease, CmdPrintAlerts, CmdPrintDashboard}
}

// Takes reports whether command (one of Commands) takes the format.
func (f Format) Takes(command string) bool {
	switch command {
	case CmdDump:
		return f.Stream != nil
	case CmdDoctor:
		return f.Doctor != nil
	case CmdEvents:
		return f.Event != nil
	case CmdHistory:
		return f.History != nil
	case CmdAcquire, CmdExtend, CmdRelease:
		return f.Action != nil
	case CmdPrintAlerts:
		return f.Alerts != nil
	case CmdPrintDashboard:
		return f.Dashboard != nil
	}
	return false
}

// File returns the file command (CmdPrintAlerts or CmdPrintDashboard) prints in the
// format, nil when none.
func (f Format) File(command string) *File {
	switch command {
	case CmdPrintAlerts:
		return f.Alerts
	case CmdPrintDashboard:
		return f.Dashboard
	}
	return nil
}

var (
	formatsMu sync.RWMutex
	formats   []Format
)

// Register adds f to the table (at init: report registers table, json and ndjson,
// package export registers prometheus and serve's files). A name registered twice
// panics.
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

// Extend lets set add writers to the format registered as name (at init, by the
// package that owns a command's result). An unregistered name panics.
func Extend(name string, set func(*Format)) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	for i := range formats {
		if formats[i].Name == name {
			set(&formats[i])
			return
		}
	}
	panic(fmt.Sprintf("report: format %q extended before it was registered", name))
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

// FormatsOf returns the formats command takes, in registration order.
func FormatsOf(command string) []Format {
	var out []Format
	for _, f := range Formats() {
		if f.Takes(command) {
			out = append(out, f)
		}
	}
	return out
}

// Names returns the names of the formats command takes (its -o completions).
func Names(command string) []string {
	var names []string
	for _, f := range FormatsOf(command) {
		names = append(names, f.Name)
	}
	return names
}

// FormatNames lists the formats command takes, as "table, json, ndjson or prometheus".
func FormatNames(command string) string {
	return orList(Names(command))
}

// Choose returns the format named name if command takes it, else an error naming
// the choices: `-o "xml": want table or json`.
func Choose(command, name string) (Format, error) {
	if f, ok := Lookup(name); ok && f.Takes(command) {
		return f, nil
	}
	return Format{}, fmt.Errorf("-o %q: want %s", name, FormatNames(command))
}

// FormatHelp is the -o help text of dump and doctor, from the table.
func FormatHelp() string {
	var parts []string
	for _, f := range FormatsOf(CmdDump) {
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

// FileHelp is the -o help text of serve's printed files, from the table: for each of
// --print-alerts and --print-dashboard, its formats with their help and the default.
func FileHelp() string {
	var cmds []string
	for _, command := range []string{CmdPrintAlerts, CmdPrintDashboard} {
		var parts []string
		for _, f := range FormatsOf(command) {
			file := f.File(command)
			var notes []string
			if file.Help != "" {
				notes = append(notes, file.Help)
			}
			if file.Default {
				notes = append(notes, "the default")
			}
			p := f.Name
			if len(notes) > 0 {
				p += " (" + strings.Join(notes, ", ") + ")"
			}
			parts = append(parts, p)
		}
		cmds = append(cmds, "with "+command+": "+orList(parts))
	}
	return strings.Join(cmds, "; ")
}

// DefaultFile returns the format command (CmdPrintAlerts or CmdPrintDashboard) prints
// when -o is not given.
func DefaultFile(command string) (Format, bool) {
	for _, f := range FormatsOf(command) {
		if f.File(command).Default {
			return f, true
		}
	}
	return Format{}, false
}

// orList joins items as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// The built-in formats, in the order the help lists them (each is defined in its own
// file, format_NAME.go).
func init() {
	for _, f := range []Format{tableFormat, jsonFormat, ndjsonFormat} {
		Register(f)
	}
}
