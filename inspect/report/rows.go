package report

import (
	"io"
	"strconv"
	"sync"
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

// writeResources writes the resource table of the rows of src, aligned exactly as
// text/tabwriter (no flags, padding 2, trailing spaces trimmed) would, in two passes
// over the rows (the column widths, then the lines) and in chunks: a million rows are
// never held as text. It returns how many rows there were and whether one was
// uncertain.
func writeResources(w io.Writer, src rowSource) (int, bool, error) {
	const cols = len(resourceHeader) - 1 // aligned columns
	var widths [cols]int
	for i := range widths {
		widths[i] = utf8.RuneCountInString(resourceHeader[i])
	}
	var mu sync.Mutex // chunks may be measured at once
	n, uncertain := 0, false
	err := src(func(rows []inspect.Resource, out []byte) ([]byte, error) {
		var cells [len(resourceHeader)]string
		var num [24]byte
		var wd [cols]int
		u := false
		for i := range rows {
			u = rowCells(&cells, &rows[i], num[:0]) || u
			for c := range wd {
				wd[c] = max(wd[c], utf8.RuneCountInString(cells[c]))
			}
		}
		mu.Lock()
		defer mu.Unlock()
		n, uncertain = n+len(rows), uncertain || u
		for c := range widths {
			widths[c] = max(widths[c], wd[c])
		}
		return out, nil
	}, func([]byte) error { return nil })
	if err != nil {
		return 0, false, err
	}
	line := func(b []byte, cells *[len(resourceHeader)]string) []byte {
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
		return append(b, '\n')
	}
	ew := &errWriter{w: w}
	header := resourceHeader
	ew.Write(line(nil, &header))
	err = src(func(rows []inspect.Resource, out []byte) ([]byte, error) {
		var cells [len(resourceHeader)]string
		var num [24]byte
		for i := range rows {
			rowCells(&cells, &rows[i], num[:0])
			out = line(out, &cells)
			if i == 0 {
				out = growFor(out, len(rows))
			}
		}
		return out, nil
	}, func(out []byte) error {
		_, err := ew.Write(out)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return n, uncertain, ew.err
}
