package report

// ndjsonFormat is `-o ndjson`: json's objects, named for --watch streams.
var ndjsonFormat = Format{Name: "ndjson", Help: "the same, named for --watch streams",
	Stream: jsonStream, Snapshot: jsonWhole, Doctor: WriteJSON, Event: writeEventJSON, History: writeHistoryNDJSON,
}
