package report

import (
	"io"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// tableFormat is `-o table`: aligned columns, for a person.
var tableFormat = Format{Name: "table", Help: "aligned columns",
	Stream:   func(w io.Writer, st *poll.Stream, _ Context) error { return WriteTableStream(w, st) },
	Snapshot: func(w io.Writer, s *inspect.Snapshot, _ Context) error { return WriteTable(w, s) },
	Doctor:   WriteDoctor, Between: "\n",
	Event: writeEventRow, EventHeader: writeEventHeader, History: writeHistoryTable,
	Action: func(w, notes io.Writer, r Action) error { return r.WriteText(w, notes) },
	Text:   true,
}
