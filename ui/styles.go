package ui

import (
	"image/color"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// Styles holds every style the console renders with. Colours are never the only
// signal: states, agreement and findings also show as text, so the console reads the
// same under NO_COLOR (where the program strips colours on output).
type Styles struct {
	Label    lipgloss.Style // the config name, in its label colour
	Header   lipgloss.Style
	Dim      lipgloss.Style
	Flag     lipgloss.Style // PAUSED, READ-ONLY
	Warn     lipgloss.Style
	Crit     lipgloss.Style
	OK       lipgloss.Style
	ColTitle lipgloss.Style // column headers
	Selected lipgloss.Style // the cursor row
	Mark     lipgloss.Style // changed-row mark

	// Per-master PTTL cells, by agreement with the row's holding value.
	CellSame   lipgloss.Style
	CellOther  lipgloss.Style
	CellAbsent lipgloss.Style
	CellDown   lipgloss.Style
	// CellProjected: a PTTL projected from an unreachable master's last sample.
	CellProjected lipgloss.Style
	// Stale: validity and PTTLs frozen while polling is paused.
	Stale lipgloss.Style

	States map[string]lipgloss.Style // by inspect.State*

	DialogBox   lipgloss.Style
	DialogTitle lipgloss.Style
	Danger      lipgloss.Style

	Help help.Styles
}

// DefaultStyles returns the console's styles with the config's label colour applied
// to the config name ("" leaves it uncoloured).
func DefaultStyles(labelColor string) Styles {
	red := lipgloss.Red
	green := lipgloss.Green
	yellow := lipgloss.Yellow
	magenta := lipgloss.Magenta
	grey := lipgloss.BrightBlack
	s := Styles{
		Label:    lipgloss.NewStyle().Bold(true).Reverse(true).Padding(0, 1),
		Header:   lipgloss.NewStyle().Bold(true),
		Dim:      lipgloss.NewStyle().Foreground(grey),
		Flag:     lipgloss.NewStyle().Bold(true).Foreground(yellow),
		Warn:     lipgloss.NewStyle().Foreground(yellow),
		Crit:     lipgloss.NewStyle().Bold(true).Foreground(red),
		OK:       lipgloss.NewStyle().Foreground(green),
		ColTitle: lipgloss.NewStyle().Bold(true).Underline(true),
		Selected: lipgloss.NewStyle().Reverse(true),
		Mark:     lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Cyan),

		CellSame:   lipgloss.NewStyle().Foreground(green),
		CellOther:  lipgloss.NewStyle().Bold(true).Foreground(magenta),
		CellAbsent: lipgloss.NewStyle().Foreground(grey),
		CellDown:   lipgloss.NewStyle().Foreground(red),
		// Italic and faint survive NO_COLOR; the ≈ prefix and the header say it in text.
		CellProjected: lipgloss.NewStyle().Italic(true).Foreground(yellow),
		Stale:         lipgloss.NewStyle().Italic(true).Faint(true),

		States: map[string]lipgloss.Style{
			"held":    lipgloss.NewStyle().Foreground(green),
			"partial": lipgloss.NewStyle().Foreground(yellow),
			"split":   lipgloss.NewStyle().Bold(true).Foreground(red),
			"no-ttl":  lipgloss.NewStyle().Bold(true).Foreground(red),
			"foreign": lipgloss.NewStyle().Foreground(magenta),
			"free":    lipgloss.NewStyle().Foreground(grey),
		},

		DialogBox:   lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1),
		DialogTitle: lipgloss.NewStyle().Bold(true),
		Danger:      lipgloss.NewStyle().Bold(true).Foreground(red),

		Help: help.DefaultStyles(true),
	}
	if c := labelColour(labelColor); c != nil {
		s.Label = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Black).Background(c).Padding(0, 1)
	}
	return s
}

// labelColour maps a config label_color (a name such as "red" or "bright-green", an
// ANSI number, or "#rrggbb") to a colour; nil for "".
func labelColour(s string) color.Color {
	s = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	if s == "" {
		return nil
	}
	if c, ok := labelColours[s]; ok {
		return c
	}
	return lipgloss.Color(s)
}

// labelColours maps every name in config.LabelColors to a terminal colour.
var labelColours = map[string]color.Color{
	"black": lipgloss.Black, "red": lipgloss.Red, "green": lipgloss.Green,
	"yellow": lipgloss.Yellow, "blue": lipgloss.Blue, "magenta": lipgloss.Magenta,
	"cyan": lipgloss.Cyan, "white": lipgloss.White, "gray": lipgloss.BrightBlack,
	"grey": lipgloss.BrightBlack, "orange": lipgloss.Color("208"),
	"bright-red": lipgloss.BrightRed, "bright-green": lipgloss.BrightGreen,
	"bright-yellow": lipgloss.BrightYellow, "bright-blue": lipgloss.BrightBlue,
	"bright-magenta": lipgloss.BrightMagenta, "bright-cyan": lipgloss.BrightCyan,
}

func (s Styles) state(st string) lipgloss.Style {
	if x, ok := s.States[st]; ok {
		return x
	}
	return lipgloss.NewStyle()
}
