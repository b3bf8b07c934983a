package inspect

import (
	"fmt"
	"strconv"
	"time"
)

// Duration formats d compactly for tables and messages: 850ms, 4.2s, 3m05s, 2h10m.
func Duration(d time.Duration) string {
	var b [24]byte
	return string(AppendDuration(b[:0], d))
}

// AppendDuration appends Duration(d) to b: a table of 100k rows formats two
// durations a row without an allocation each.
func AppendDuration(b []byte, d time.Duration) []byte {
	switch {
	case d < time.Second:
		return append(strconv.AppendInt(b, d.Milliseconds(), 10), "ms"...)
	case d < time.Minute:
		return append(strconv.AppendFloat(b, d.Seconds(), 'f', 1, 64), 's')
	case d < time.Hour:
		b = append(strconv.AppendInt(b, int64(d.Minutes()), 10), 'm')
		return append(append2(b, int64(d.Seconds())%60), 's')
	default:
		b = append(strconv.AppendInt(b, int64(d.Hours()), 10), 'h')
		return append(append2(b, int64(d.Minutes())%60), 'm')
	}
}

// append2 appends n (0 ≤ n < 100) in two digits.
func append2(b []byte, n int64) []byte {
	return append(b, byte('0'+n/10), byte('0'+n%10))
}

// Uptime formats a number of seconds like Duration, with whole seconds below a minute.
func Uptime(s int64) string {
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return Duration(time.Duration(s) * time.Second)
}
