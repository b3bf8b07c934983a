package ui

import (
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// common is what every pane reads and none writes: the styles, the key maps, the
// read-only flag, the clock and the action deadline. The root Model owns it (embedded)
// and hands panes a pointer, as soft-serve's pkg/ui/common does.
type common struct {
	keys          KeyMap
	dkeys         DialogKeyMap
	styles        Styles
	readOnly      bool
	clock         func() time.Time
	actionTimeout time.Duration
}

// A pane is a component of the console: its own state, a View, the keys it shows in
// the help line, and an Update that changes only itself. What it wants of its parent
// (close it, run an action, quit) it asks for with a message (below), returned as a
// command. A new pane (an activity feed, say) is one file implementing dialog (a
// modal) or drawn by view.go; it never reaches into the Model.

// Messages from panes to the root Model.
type (
	// closeDialogMsg asks the Model to close the dialog that sent it.
	closeDialogMsg struct{}
	// actionRequestMsg asks the Model to run req through Actions (showing it pending).
	actionRequestMsg struct{ req actionReq }
	// quitRequestMsg asks the Model to quit, releasing the locks it holds or not.
	quitRequestMsg struct{ release bool }
)

// tell returns a command that delivers msg to the parent.
func tell(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

// box draws a dialog: the plain title (wrapped, never cut, so a resource name in it
// can be read whole) and the body lines, each cut to the box.
func (c *common) box(title string, width int, body []string) string {
	return c.titledBox(title, c.styles.DialogTitle, width, body)
}

func (c *common) titledBox(title string, st lipgloss.Style, width int, body []string) string {
	inner := dialogWidth(width) - 4
	var lines []string
	for _, l := range wrap(title, inner) {
		lines = append(lines, st.Render(l))
	}
	lines = append(lines, "")
	for _, l := range body {
		lines = append(lines, fit(l, inner))
	}
	return c.styles.DialogBox.Width(inner + 4).Render(strings.Join(lines, "\n"))
}
