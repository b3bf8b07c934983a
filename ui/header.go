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

func (m *Model) pollInterval() time.Duration {
	if d := m.cfg.Inspect.PollInterval; d > 0 {
		return d
	}
	return time.Second
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
