package report

import (
	"strings"
	"testing"
)

// The table drives validation and help: every built-in format writes streams and whole
// snapshots and serves doctor, and the names read as the help says.
func TestFormatsTable(t *testing.T) {
	for _, name := range []string{"table", "json", "ndjson"} {
		f, ok := Lookup(name)
		if !ok || f.Stream == nil || f.Snapshot == nil || f.Doctor == nil {
			t.Errorf("format %s: %v %+v", name, ok, f)
		}
	}
	if _, ok := Lookup("xml"); ok {
		t.Error("an unregistered format was found")
	}
	if got := FormatNames("doctor"); got != "table, json or ndjson" {
		t.Errorf("doctor's formats %q", got)
	}
	if h := FormatHelp(); !strings.HasPrefix(h, "output: table (") || !strings.Contains(h, "ndjson (") {
		t.Errorf("help %q", h)
	}
	defer func() {
		if recover() == nil {
			t.Error("a format registered twice did not panic")
		}
	}()
	Register(Format{Name: "json"})
}

// Each command takes the formats that have its writer, and Choose refuses any other
// with the choices named; the admin commands take table and json, and only the table
// is for a person.
func TestFormatsOfEachCommand(t *testing.T) {
	for _, c := range []struct{ command, names string }{
		{CmdDoctor, "table, json or ndjson"},
		{CmdEvents, "table, json or ndjson"},
		{CmdHistory, "table, json or ndjson"},
		{CmdAcquire, "table or json"},
		{CmdExtend, "table or json"},
		{CmdRelease, "table or json"},
	} {
		if got := FormatNames(c.command); got != c.names {
			t.Errorf("%s takes %q, want %q", c.command, got, c.names)
		}
		for _, name := range strings.Split(strings.NewReplacer(", ", " ", " or ", " ").Replace(c.names), " ") {
			if f, err := Choose(c.command, name); err != nil || f.Name != name {
				t.Errorf("%s -o %s: %v %q", c.command, name, err, f.Name)
			}
		}
	}
	_, err := Choose(CmdAcquire, "ndjson")
	if err == nil || err.Error() != `-o "ndjson": want table or json` {
		t.Errorf("acquire -o ndjson: %v", err)
	}
	if _, err := Choose("nosuch", "table"); err == nil {
		t.Error("a command that is not in the table took a format")
	}
	for _, name := range []string{"table", "json", "ndjson"} {
		f, _ := Lookup(name)
		if f.Text != (name == "table") {
			t.Errorf("%s: Text %v", name, f.Text)
		}
	}
}

// Extend adds a writer to a registered format and panics for one never registered.
func TestExtend(t *testing.T) {
	saved := Formats()
	t.Cleanup(func() {
		formatsMu.Lock()
		formats = saved
		formatsMu.Unlock()
	})
	Register(Format{Name: "test-extend"})
	Extend("test-extend", func(f *Format) { f.Alerts = &File{Help: "x"} })
	if f, _ := Lookup("test-extend"); f.Alerts == nil || !f.Takes(CmdPrintAlerts) || f.Takes(CmdPrintDashboard) {
		t.Errorf("extended format %+v", f)
	}
	defer func() {
		if recover() == nil {
			t.Error("extending an unregistered format did not panic")
		}
	}()
	Extend("test-never-registered", func(*Format) {})
}
