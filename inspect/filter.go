package inspect

import "github.com/redlockctl/redlockctl/internal/config"

// Filter returns a copy of s with only the rows whose resource name matches glob
// (Redis glob syntax: * ? [abc] [^a] \x; "" matches all) and, when onlyReportable, only
// rows with anomalies or a split/no-ttl/foreign state; the summary is recounted. With
// no glob and no onlyReportable it returns s itself: nothing is copied or recounted.
func Filter(s *Snapshot, glob string, onlyReportable bool) *Snapshot {
	if glob == "" && !onlyReportable {
		return s
	}
	c := *s
	c.Resources = nil
	for i := range s.Resources {
		if r := &s.Resources[i]; keepRow(r, glob, onlyReportable) {
			c.Resources = append(c.Resources, *r)
		}
	}
	if c.Resources == nil {
		c.Resources = []Resource{}
	}
	summarize(&c)
	return &c
}

// keepRow reports whether Filter keeps r.
func keepRow(r *Resource, glob string, onlyReportable bool) bool {
	if glob != "" && !config.MatchGlob(glob, r.Resource) {
		return false
	}
	return !onlyReportable || r.Reportable()
}
