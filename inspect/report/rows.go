package report

import (
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/redlockctl/redlockctl/inspect"
)

// resourceHeader is the resource table's title row.
var resourceHeader = [...]string{"RESOURCE", "STATE", "OWNER", "HOLDERS", "VALIDITY", "SPREAD", "TOKEN", "ANOMALIES"}

// rowCells returns the cells of one resource row (the last one is not aligned), and
// whether the row is uncertain.
func rowCells(cells *[len(resourceHeader)]string, r *inspect.Resource, num []byte) bool {
	state := r.State
	if r.Uncertain {
		state += "?"
	}
	owner := r.Owner
	if owner == "" && r.Value != "" {
		owner = `"` + Display(r.Value, ownerWidth-2) + `"`
	} else {
		owner = Display(owner, ownerWidth)
	}
	num = strconv.AppendInt(num[:0], int64(r.Holders), 10)
	num = append(num, '/')
	num = strconv.AppendInt(num, int64(len(r.Nodes)), 10)
	*cells = [...]string{Display(r.Resource, resourceWidth), state, dash(owner), string(num),
		validity(r), spread(r), token(r.Token), anomalies(r.Anomalies)}
	return r.Uncertain
}

// writeResources writes the resource table of the rows each hands out, aligned
// exactly as text/tabwriter (no flags, padding 2, trailing spaces trimmed) would, in
// two passes over the rows (the column widths, then the lines) and in chunks: a
// million rows are never held as text. It returns how many rows there were and
// whether one was uncertain.
func writeResources(w io.Writer, each func(func([]inspect.Resource) error) error) (int, bool, error) {
	const cols = len(resourceHeader) - 1 // aligned columns
	var widths [cols]int
	for i := range widths {
		widths[i] = utf8.RuneCountInString(resourceHeader[i])
	}
	var cells [len(resourceHeader)]string
	var num [24]byte
	n, uncertain := 0, false
	err := each(func(rows []inspect.Resource) error {
		n += len(rows)
		for i := range rows {
			uncertain = rowCells(&cells, &rows[i], num[:0]) || uncertain
			for c := range widths {
				widths[c] = max(widths[c], utf8.RuneCountInString(cells[c]))
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	out := &chunkWriter{w: w, buf: make([]byte, 0, jsonChunk+4096)}
	line := func(cells *[len(resourceHeader)]string) {
		b := out.buf
		for c := range widths {
			b = append(b, cells[c]...)
			for n := widths[c] + 2 - utf8.RuneCountInString(cells[c]); n > 0; n-- {
				b = append(b, ' ')
			}
		}
		b = append(b, cells[cols]...)
		for len(b) > 0 && b[len(b)-1] == ' ' {
			b = b[:len(b)-1]
		}
		out.buf = append(b, '\n')
		if len(out.buf) >= jsonChunk {
			out.flush()
		}
	}
	header := resourceHeader
	line(&header)
	err = each(func(rows []inspect.Resource) error {
		for i := range rows {
			rowCells(&cells, &rows[i], num[:0])
			line(&cells)
		}
		return out.err
	})
	if err != nil {
		return 0, false, err
	}
	out.flush()
	return n, uncertain, out.err
}
