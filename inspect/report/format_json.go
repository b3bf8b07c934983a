package report

import (
	"encoding/json"
	"io"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// jsonFormat is `-o json`: one JSON object per snapshot, event or action result.
var jsonFormat = Format{Name: "json", Help: "one JSON object per snapshot (events: per event and line)",
	Stream:   jsonStream,
	Snapshot: jsonWhole, Doctor: WriteJSON, Event: writeEventJSON, History: writeHistoryJSON,
	Action: writeActionJSON,
}

func jsonStream(w io.Writer, st *poll.Stream, _ Context) error { return WriteJSONStream(w, st) }

func jsonWhole(w io.Writer, s *inspect.Snapshot, _ Context) error { return WriteJSON(w, s) }

// writeActionJSON writes an admin action's result as one JSON object and a newline.
func writeActionJSON(w, _ io.Writer, r Action) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
