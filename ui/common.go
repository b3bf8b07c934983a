package ui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/redlockctl/redlockctl/inspect"
)

// common is what every pane reads and none writes: the styles, the key maps, the
// read-only flag, the clock and the action deadline, and the console's data: the last
// poll and its rows, the locks this console holds and the live feed's record. The
// root Model owns it (embedded) and alone changes it (drawing only refreshes the live
// record's per-resource caches: its rate window and sorted hold times); panes hold a
// pointer, as soft-serve's pkg/ui/common is shared.
type common struct {
	keys          KeyMap
	dkeys         DialogKeyMap
	styles        Styles
	readOnly      bool
	clock         func() time.Time
	actionTimeout time.Duration

	snap *inspect.Snapshot // the last poll (nil before the first)
	now  time.Time         // the time poll ages are measured at
	// liveAt is the time live rates are measured at: now, or the moment the console
	// was paused (paused means frozen). render sets it.
	liveAt time.Time
	table  *table               // the last poll's rows, sorted and filtered
	held   map[string]*heldLock // the locks this console acquired and holds
	live   *liveBoard           // the live feed's record (nil without a feed)
}

// A pane is a component of the console, as soft-serve's Component is: its own state,
// its own keys (a KeyMap with ShortHelp and FullHelp, for the help line), a size
// given by its parent, and a View of that size. The panes beside the resource table
// are the masters panel (masters.go), the live activity pane (activity.go) and the
// detail view (detail.go); the root Model routes each key to the pane that has the
// focus. A pane's update changes only the pane, never the Model or the shared data;
// no pane does I/O. A new pane is one file implementing component.
type component interface {
	help.KeyMap
	SetSize(width, height int)
	View() string
}

// A dialog (dialog.go) is a modal pane: it gets every key until it asks its parent,
// by message, to close it, to run an action or to quit.

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

// The panes are components.
var (
	_ component = (*mastersPane)(nil)
	_ component = (*activityPane)(nil)
	_ component = (*detailPane)(nil)
)
