package history

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseTime reads an instant as the history commands take it, relative to now:
//
//   - RFC 3339: 2026-11-28T03:12:00Z, 2026-11-28T03:12:00.5+01:00;
//   - a local clock time, 15:04 or 15:04:05: its latest occurrence up to now
//     (today's, or yesterday's when today's is still to come);
//   - a negative duration: -2h, -90s, -1d12h (d is 24 hours).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("no time given: want RFC 3339, a local 15:04, or -2h")
	}
	if strings.HasPrefix(s, "-") {
		d, err := ParseDuration(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: %v", s, err)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"15:04", "15:04:05", "15:04:05.999999"} {
		c, err := time.ParseInLocation(layout, s, now.Location())
		if err != nil {
			continue
		}
		y, m, d := now.Date()
		t := time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), now.Location())
		if t.After(now) {
			t = t.AddDate(0, 0, -1)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: not a time: want RFC 3339 (2026-11-28T03:12:00Z), a local 15:04, or -2h", s)
}

// ParseSince reads where a window starts: a duration back from now (24h, 2d) or
// an instant as ParseTime takes it.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := ParseDuration(strings.TrimSpace(s)); err == nil {
		return now.Add(-d), nil
	}
	return ParseTime(s, now)
}

// ParseDuration is time.ParseDuration that also takes days (1d = 24h), as in 2d
// or 1d12h, and refuses a negative duration.
func ParseDuration(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, fmt.Errorf("%q: not a duration (like 90s, 2h, 1d12h)", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: not a duration (like 90s, 2h, 1d12h)", s)
	}
	return days + d, nil
}
