package inspect

// Filter returns a copy of s with only the rows that match the filter (the Query
// language: ParseQuery; "" matches all) and, when onlyReportable, only rows with
// anomalies or a split/no-ttl/foreign state; the summary is recounted. With no filter
// and no onlyReportable it returns s itself: nothing is copied or recounted. A filter
// that does not parse keeps no row (callers check it with ParseQuery first).
func Filter(s *Snapshot, filter string, onlyReportable bool) *Snapshot {
	if filter == "" && !onlyReportable {
		return s
	}
	q, err := ParseQuery(filter)
	c := *s
	c.Resources = nil
	for i := range s.Resources {
		if r := &s.Resources[i]; err == nil && KeepRow(r, q, onlyReportable) {
			c.Resources = append(c.Resources, *r)
		}
	}
	if c.Resources == nil {
		c.Resources = []Resource{}
	}
	Summarize(&c)
	return &c
}

// KeepRow reports whether Filter keeps r.
func KeepRow(r *Resource, q Query, onlyReportable bool) bool {
	if !q.Empty() && !q.Match(fieldsOf(r)) {
		return false
	}
	return !onlyReportable || r.Reportable()
}
