package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/redlock/topology"
)

// addrCell is what the masters panel shows as a master's address: the address, the
// resolved one for a Sentinel group, "cluster N shards" for a cluster.
func addrCell(ms inspect.Master) string {
	if ms.Via == "cluster" {
		return fmt.Sprintf("cluster %d shards", len(ms.Shards))
	}
	return ms.Addr
}

// topologyLines is the detail's part about Sentinel groups and clusters: the master a
// group was read at, and every shard of a cluster (address, up, clock, slots,
// findings), marking the one that holds the resource's key.
func (p *detailPane) topologyLines(r *inspect.Resource, width int) []string {
	st := p.c.styles
	var lines []string
	for _, ms := range p.c.snap.Masters {
		switch ms.Via {
		case "sentinel":
			lines = append(lines, "", fit(clean(ms.Name)+" via sentinel "+clean(ms.SentinelMasterName)+": master "+clean(ms.Addr), width))
		case "cluster":
			slot := -1
			if r != nil {
				slot = topology.Slot(r.Key)
			}
			head := clean(ms.Name) + ": cluster of " + strconv.Itoa(len(ms.Shards)) + " shards"
			if slot >= 0 {
				head += fmt.Sprintf(" (key in slot %d)", slot)
			}
			lines = append(lines, "", st.Header.Render(fit(head, width)))
			for _, sh := range ms.Shards {
				mark := "  "
				if slot >= 0 && inSlots(sh.Slots, slot) {
					mark = "> "
				}
				line := mark + fit(clean(sh.Addr), 21) + " "
				if !sh.Up {
					line += st.Crit.Render("down") + " " + clean(sh.Error)
					lines = append(lines, fit(line, width))
					continue
				}
				rate := "?"
				if sh.ClockRatePPM != nil {
					rate = fmt.Sprintf("%+.0fppm", *sh.ClockRatePPM)
				}
				line += st.OK.Render("up  ") + fmt.Sprintf(" %7s %+9.1fms %9s  slots %s", fmt.Sprintf("%.1fms", sh.RTTMs), sh.ClockOffsetMs, rate, clean(sh.Slots))
				for _, f := range sh.Findings {
					b := "[" + clean(f.Code) + "]"
					if f.Severity == inspect.SeverityCrit {
						b = st.Crit.Render(b)
					} else {
						b = st.Warn.Render(b)
					}
					line += " " + b
				}
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// inSlots reports whether slot is in ranges such as "0-5460,10923".
func inSlots(ranges string, slot int) bool {
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}
