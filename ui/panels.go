package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/internal/errkind"
)

// header renders the one-line header: config name in its label colour, masters up/N,
// quorum, poll age, summary counts, PAUSED and READ-ONLY.
func (m *Model) header() string {
	st := m.styles
	name := m.cfg.Name
	if name == "" {
		name = "redlockctl"
	}
	parts := []string{st.Label.Render(clean(name))}
	n := len(m.cfg.Masters)
	q := m.cfg.Quorum()
	if s := m.snap; s != nil {
		n = len(s.Masters)
		q = s.Quorum
		up := 0
		for _, ms := range s.Masters {
			if ms.Up {
				up++
			}
		}
		upText := fmt.Sprintf("masters %d/%d up", up, n)
		switch {
		case up < q:
			upText = st.Crit.Render(upText)
		case up < n:
			upText = st.Warn.Render(upText)
		}
		parts = append(parts, upText, fmt.Sprintf("quorum %d", q))
		age := max(0, m.now.Sub(s.TakenAt))
		ageText := "polled " + fmtDur(age.Round(100*time.Millisecond)) + " ago"
		switch {
		case m.paused:
			// Early in the line, so 80 columns keep it: every time-based cell is frozen.
			ageText = st.Flag.Render("PAUSED: figures as of " + s.TakenAt.Format("15:04:05"))
		case age > 3*m.pollInterval():
			ageText = st.Warn.Render(ageText + " (stale)")
		}
		parts = append(parts, ageText)
	} else {
		parts = append(parts, fmt.Sprintf("masters ?/%d", n), fmt.Sprintf("quorum %d", q), "polling…")
	}
	if m.polling && m.snap != nil {
		parts = append(parts, st.Dim.Render("polling…"))
	}
	if m.readOnly {
		parts = append(parts, st.Flag.Render("READ-ONLY"))
	}
	// The lock summary before what is said only now and then (the live feed's state,
	// the config's path): 80 columns keep it.
	if s := m.snap; s != nil {
		sum, one := s.Summary, s.Summary.SingleSummary
		counts := fmt.Sprintf("%s: %d held", plural(sum.Resources, "lock"), sum.Held+one.Held)
		for _, c := range []struct {
			n    int
			name string
		}{{sum.Partial, "partial"}, {sum.Split, "split"}, {sum.NoTTL + one.NoTTL, "no-ttl"}, {sum.Foreign + one.Foreign, "foreign"}} {
			if c.n > 0 {
				counts += ", " + st.state(c.name).Render(fmt.Sprintf("%d %s", c.n, c.name))
			}
		}
		parts = append(parts, counts)
	}
	if m.paused && m.snap == nil {
		parts = append(parts, st.Flag.Render("PAUSED"))
	}
	if s := m.snap; s != nil {
		for _, ms := range s.Masters { // a master that answered but was not read whole
			if ms.Up && (ms.Capped || ms.Incomplete != "") {
				parts = append(parts, st.Warn.Render("INCOMPLETE: "+clean(ms.Name)+" not read whole"))
				break
			}
		}
		if s.Slow {
			parts = append(parts, st.Warn.Render(fmt.Sprintf("SLOW poll %s", fmtMs(int64(s.PollMs)))))
		}
	}
	if m.live != nil {
		if status := m.live.status(); status != "live" {
			parts = append(parts, st.Warn.Render(clean(status)))
		}
	}
	if m.cfg.Path != "" {
		parts = append(parts, st.Dim.Render("config "+clean(m.cfg.Path)))
	}
	return strings.Join(parts, "  ")
}

// mastersPanel renders one line per master: name, address, up/down/slow, RTT, clock
// offset ± uncertainty, rate, uptime and findings as short badges.
func (m *Model) mastersPanel(width int) []string {
	st := m.styles
	s := m.snap
	if s == nil {
		return nil
	}
	nameW, addrW := 6, 8
	for _, ms := range s.Masters {
		nameW = max(nameW, len(clean(ms.Name)))
		addrW = max(addrW, len(clean(addrCell(ms))))
	}
	nameW = min(nameW, 12)
	addrW = min(addrW, 21)
	if width < 100 {
		addrW = min(addrW, 15)
	}
	title := fmt.Sprintf("%s %s %-4s %7s %17s %9s %7s  %s", fit("MASTER", nameW), fit("ADDR", addrW),
		"", "RTT", "CLOCK OFFSET", "RATE", "UPTIME", "FINDINGS")
	lines := []string{st.ColTitle.Render(fit(title, min(width, len(title))))}
	slow := m.slowRTT()
	for _, ms := range s.Masters {
		status := st.OK.Render("up  ")
		switch {
		case !ms.Up:
			status = st.Crit.Render("down")
		case slow > 0 && ms.RTTMs >= slow:
			status = st.Warn.Render("slow")
		}
		line := fit(clean(ms.Name), nameW) + " " + fit(clean(addrCell(ms)), addrW) + " " + status
		if !ms.Up {
			line += " " + st.Crit.Render(errText(ms.ErrorKind, ms.Error))
			lines = append(lines, line)
			continue
		}
		rate := "?"
		if ms.ClockRatePPM != nil {
			rate = fmt.Sprintf("%+.0fppm", *ms.ClockRatePPM)
		}
		offset := fmt.Sprintf("%+.1fms ±%.1f", ms.ClockOffsetMs, ms.ClockUncertaintyMs)
		if ms.ClockJump {
			offset = "jump " + offset
		}
		line += fmt.Sprintf(" %7s %17s %9s %7s ", fmt.Sprintf("%.1fms", ms.RTTMs), offset, rate, fmtUptime(ms.UptimeS))
		badges := m.topologyTags(ms)
		for _, f := range ms.Findings {
			b := "[" + clean(f.Code) + "]"
			if f.Severity == "crit" {
				b = st.Crit.Render(b)
			} else {
				b = st.Warn.Render(b)
			}
			badges = append(badges, b)
		}
		if ms.Capped {
			badges = append(badges, st.Warn.Render("[capped]"))
		}
		if tag := m.serverTag(ms); tag != "" {
			badges = append(badges, tag)
		}
		line += " " + strings.Join(badges, " ")
		lines = append(lines, line)
	}
	for _, f := range s.Findings {
		lines = append(lines, st.Warn.Render("! "+clean(f.Message)))
	}
	return lines
}

// slowRTT is the RTT (ms) from which a master shows as slow: half the node timeout.
func (m *Model) slowRTT() float64 {
	t := m.cfg.Lock.NodeTimeout
	if t <= 0 {
		return 0
	}
	return float64(t.Microseconds()) / 2000
}

func (m *Model) pollInterval() time.Duration {
	if d := m.cfg.Inspect.PollInterval; d > 0 {
		return d
	}
	return time.Second
}

// summaryLine renders all masters on one line, for terminals too short for the panel.
func (m *Model) summaryLine() string {
	s := m.snap
	if s == nil {
		return ""
	}
	var parts []string
	for _, ms := range s.Masters {
		p := clean(ms.Name) + ":"
		if ms.Up {
			p += m.styles.OK.Render("up")
		} else {
			// The kind, not the finding count: being down is the finding.
			parts = append(parts, p+m.styles.Crit.Render("down("+kindOf(ms.ErrorKind, ms.Error).String()+")"))
			continue
		}
		if len(ms.Findings) > 0 {
			p += m.styles.Warn.Render(fmt.Sprintf("(%d)", len(ms.Findings)))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// kindOf is k, or the kind of msg when k is unset.
func kindOf(k errkind.Kind, msg string) errkind.Kind {
	if k == errkind.None {
		return errkind.OfText(msg)
	}
	return k
}

// errText is a master error as the console shows it: its kind first (so a cut line
// still names it), then the message, escaped.
func errText(k errkind.Kind, msg string) string {
	if msg == "" {
		return "did not answer"
	}
	return kindOf(k, msg).String() + ": " + clean(msg)
}

// plural writes "1 lock", "2 locks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
