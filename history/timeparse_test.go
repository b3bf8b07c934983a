package history

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, loc)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-11-28T03:12:00Z", time.Date(2026, 11, 28, 3, 12, 0, 0, time.UTC)},
		{"2026-11-28T03:12:00.25+01:00", time.Date(2026, 11, 28, 3, 12, 0, 250e6, loc)},
		{"03:12", time.Date(2026, 11, 28, 3, 12, 0, 0, loc)},
		{"23:05:10", time.Date(2026, 11, 27, 23, 5, 10, 0, loc)}, // today's is still to come
		{"-2h", now.Add(-2 * time.Hour)},
		{"-1d12h", now.Add(-36 * time.Hour)},
	} {
		got, err := ParseTime(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "25:00", "-2x", "2026-11-28"} {
		if _, err := ParseTime(bad, now); err == nil || !strings.Contains(err.Error(), "") {
			t.Errorf("ParseTime(%q): no error", bad)
		}
	}
	got, err := ParseSince("24h", now)
	if err != nil || !got.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("ParseSince(24h) = %v, %v", got, err)
	}
	if _, err := ParseDuration("-5m"); err == nil {
		t.Error("ParseDuration(-5m): no error")
	}
}
