package inspect

import (
	"fmt"
	"time"
)

// Duration formats d compactly for tables and messages: 850ms, 4.2s, 3m05s, 2h10m.
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// Uptime formats a number of seconds like Duration, with whole seconds below a minute.
func Uptime(s int64) string {
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return Duration(time.Duration(s) * time.Second)
}
