package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"

	"github.com/redlockctl/redlockctl/inspect"
)

// MastersKeyMap is the keys of the masters panel: none. The panel is never focused;
// it follows the poll.
type MastersKeyMap struct{}

// ShortHelp is the panel's part of the help line: nothing.
func (MastersKeyMap) ShortHelp() []key.Binding { return nil }

// FullHelp is the panel's part of the `?` help: nothing.
func (MastersKeyMap) FullHelp() [][]key.Binding { return nil }

// mastersPane is the masters panel above the table: one line per master (name,
// address, up/down/slow, RTT, clock offset ± uncertainty, rate, uptime, topology and
// findings as badges) and the fleet's findings, or, when that does not fit the
// height it is given, every master on one summary line. It draws the last poll
// (common.snap); its own state is its size and the RTT from which a master is slow.
type mastersPane struct {
	c             *common
	keys          MastersKeyMap
	width, height int     // height: the most lines the panel may take
	slow          float64 // ms; 0: no master is called slow
}

func newMastersPane(c *common, nodeTimeout time.Duration) *mastersPane {
	return &mastersPane{c: c, slow: slowRTT(nodeTimeout)}
}

// SetSize sets the width and the most lines the panel may take; beyond them it
// shrinks to the summary line.
func (p *mastersPane) SetSize(width, height int) { p.width, p.height = width, height }

// ShortHelp is the panel's keys (none).
func (p *mastersPane) ShortHelp() []key.Binding { return p.keys.ShortHelp() }

// FullHelp is the panel's keys (none).
func (p *mastersPane) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

// View renders lines() as one block.
func (p *mastersPane) View() string { return strings.Join(p.lines(), "\n") }

// lines is the panel when it fits in the height given, else the summary line; none
// before the first poll.
func (p *mastersPane) lines() []string {
	if p.c.snap == nil {
		return nil
	}
	if panel := p.panel(p.width); len(panel) <= p.height {
		return panel
	}
	return []string{p.summaryLine()}
}

// mastersPanel renders one line per master: name, address, up/down/slow, RTT, clock
// offset ± uncertainty, rate, uptime and findings as short badges.
func (p *mastersPane) panel(width int) []string {
	st := p.c.styles
	s := p.c.snap
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
	slow := p.slow
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
		badges := p.topologyTags(ms)
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
		if tag := p.serverTag(ms); tag != "" {
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
func slowRTT(nodeTimeout time.Duration) float64 {
	if nodeTimeout <= 0 {
		return 0
	}
	return float64(nodeTimeout.Microseconds()) / 2000
}

// summaryLine renders all masters on one line, for terminals too short for the panel.
func (p *mastersPane) summaryLine() string {
	s, st := p.c.snap, p.c.styles
	if s == nil {
		return ""
	}
	var parts []string
	for _, ms := range s.Masters {
		part := clean(ms.Name) + ":"
		if ms.Up {
			part += st.OK.Render("up")
		} else {
			// The kind, not the finding count: being down is the finding.
			parts = append(parts, part+st.Crit.Render("down("+kindOf(ms.ErrorKind, ms.Error).String()+")"))
			continue
		}
		if len(ms.Findings) > 0 {
			part += st.Warn.Render(fmt.Sprintf("(%d)", len(ms.Findings)))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}

// serverTag is the server kind and version, when known ("" otherwise).
func (p *mastersPane) serverTag(ms inspect.Master) string {
	if ms.Server == "" {
		return ""
	}
	return p.c.styles.Dim.Render(clean(strings.TrimSpace(ms.Server + " " + ms.Version)))
}

// topologyTags are the masters panel's words after the uptime, before the findings:
// "via sentinel NAME", a cluster's shards up.
func (p *mastersPane) topologyTags(ms inspect.Master) []string {
	st := p.c.styles
	var tags []string
	switch ms.Via {
	case "sentinel":
		tags = append(tags, st.Dim.Render("via sentinel "+clean(ms.SentinelMasterName)))
	case "cluster":
		up := 0
		for _, sh := range ms.Shards {
			if sh.Up {
				up++
			}
		}
		text := fmt.Sprintf("%d/%d shards up", up, len(ms.Shards))
		if up < len(ms.Shards) {
			text = st.Crit.Render(text)
		}
		tags = append(tags, text)
		if ms.Incomplete != "" {
			tags = append(tags, st.Warn.Render("[incomplete]"))
		}
	}
	return tags
}

// addrCell is what the masters panel shows as a master's address: the address, the
// resolved one for a Sentinel group, "cluster N shards" for a cluster.
func addrCell(ms inspect.Master) string {
	if ms.Via == "cluster" {
		return fmt.Sprintf("cluster %d shards", len(ms.Shards))
	}
	return ms.Addr
}
