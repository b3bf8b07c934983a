package report

import (
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redlockctl/redlockctl/inspect"
)

// resourceHeader is the resource table's title row.
var resourceHeader = [...]string{"RESOURCE", "STATE", "OWNER", "HOLDERS", "VALIDITY", "SPREAD", "TOKEN", "ANOMALIES"}

// cellEnds is where each cell of a row ends in the bytes that hold the row's cells.
type cellEnds [len(resourceHeader)]int

// rowCells appends the cells of one resource row to b (the last one is not aligned),
// one after the other, sets ends to where each ends, and reports whether the row is
// uncertain. A table of 100k rows is formatted twice (widths, then lines) into one
// buffer per chunk, without an allocation per cell.
func rowCells(b []byte, ends *cellEnds, r *inspect.Resource) ([]byte, bool) {
	b = append(b, Display(r.Resource, resourceWidth)...)
	ends[0] = len(b)
	b = append(b, r.State...)
	if r.Uncertain {
		b = append(b, '?')
	}
	ends[1] = len(b)
	if r.Owner == "" && r.Value != "" {
		b = append(append(append(b, '"'), Display(r.Value, ownerWidth-2)...), '"')
	} else {
		b = append(b, dash(Display(r.Owner, ownerWidth))...)
	}
	ends[2] = len(b)
	b = strconv.AppendInt(b, int64(r.Holders), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(len(r.Nodes)), 10)
	ends[3] = len(b)
	if r.State == inspect.StateHeld {
		b = inspect.AppendDuration(b, time.Duration(r.ValidityMs)*time.Millisecond)
	} else {
		b = append(b, '-')
	}
	ends[4] = len(b)
	if r.Value != "" {
		b = inspect.AppendDuration(b, time.Duration(r.TTLSpreadMs)*time.Millisecond)
	} else {
		b = append(b, '-')
	}
	ends[5] = len(b)
	if r.Token != 0 {
		b = strconv.AppendInt(b, r.Token, 10)
	} else {
		b = append(b, '-')
	}
	ends[6] = len(b)
	for i, a := range r.Anomalies {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, a.Code...)
		if a.Master != "" {
			b = append(append(b, '@'), a.Master...)
		}
	}
	if len(r.Anomalies) == 0 {
		b = append(b, '-')
	}
	ends[7] = len(b)
	return b, r.Uncertain
}

// cell is cell c of a row that rowCells appended to b.
func cell(b []byte, ends *cellEnds, c int) []byte {
	if c == 0 {
		return b[:ends[0]]
	}
	return b[ends[c-1]:ends[c]]
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
		var buf [256]byte
		b := buf[:0] // a row's cells, the buffer reused for the next row
		var ends cellEnds
		var wd [cols]int
		u := false
		for i := range rows {
			var ru bool
			b, ru = rowCells(b[:0], &ends, &rows[i])
			u = u || ru
			for c := range wd {
				wd[c] = max(wd[c], utf8.RuneCount(cell(b, &ends, c)))
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
	line := func(out, b []byte, ends *cellEnds) []byte {
		for c := range widths {
			cb := cell(b, ends, c)
			out = append(out, cb...)
			for n := widths[c] + 2 - utf8.RuneCount(cb); n > 0; n-- {
				out = append(out, ' ')
			}
		}
		out = append(out, cell(b, ends, cols)...)
		for len(out) > 0 && out[len(out)-1] == ' ' {
			out = out[:len(out)-1]
		}
		return append(out, '\n')
	}
	ew := &errWriter{w: w}
	var header []byte
	var headerEnds cellEnds
	for c, h := range resourceHeader {
		header = append(header, h...)
		headerEnds[c] = len(header)
	}
	ew.Write(line(nil, header, &headerEnds))
	err = src(func(rows []inspect.Resource, out []byte) ([]byte, error) {
		var buf [256]byte
		b := buf[:0]
		var ends cellEnds
		for i := range rows {
			b, _ = rowCells(b[:0], &ends, &rows[i])
			out = line(out, b, &ends)
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
