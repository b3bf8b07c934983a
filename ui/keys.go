package ui

import "charm.land/bubbles/v2/key"

// KeyMap is the root Model's keys: the table's and the console's (help, quit, pause,
// refresh, the actions). The panes have their own (DetailKeyMap, ActivityKeyMap,
// MastersKeyMap). In read-only mode the action bindings are unbound: they match no
// key and do not appear in help.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding

	Detail    key.Binding // open the detail of the row under the cursor
	Back      key.Binding // leave the detail, clear the filter
	Filter    key.Binding
	Anomalies key.Binding // toggle: rows with anomalies only
	SortNext  key.Binding
	SortPrev  key.Binding
	Reverse   key.Binding
	Pause     key.Binding
	Refresh   key.Binding
	Help      key.Binding
	Quit      key.Binding

	// Actions (write commands): unbound in read-only mode.
	Acquire      key.Binding
	Extend       key.Binding
	Release      key.Binding // release a lock this console holds
	ForceRelease key.Binding
}

// DefaultKeyMap returns the console's keys; readOnly unbinds every action key.
func DefaultKeyMap(readOnly bool) KeyMap {
	k := KeyMap{
		Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:    key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:  key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:       key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first row")),
		Bottom:    key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last row")),
		Detail:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back/clear filter")),
		Filter:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Anomalies: key.NewBinding(key.WithKeys("!"), key.WithHelp("!", "anomalies only")),
		SortNext:  key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "next sort column")),
		SortPrev:  key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "previous sort column")),
		Reverse:   key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "reverse order")),
		Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume")),
		Refresh:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh now")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),

		Acquire:      key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "acquire")),
		Extend:       key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "extend")),
		Release:      key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "release mine")),
		ForceRelease: key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "force-release")),
	}
	if readOnly {
		k.Acquire.Unbind()
		k.Extend.Unbind()
		k.Release.Unbind()
		k.ForceRelease.Unbind()
	}
	return k
}

// actions returns the action bindings (all unbound in read-only mode).
func (k KeyMap) actions() []key.Binding {
	return []key.Binding{k.Acquire, k.Extend, k.Release, k.ForceRelease}
}

// ShortHelp is the help line: the focused pane's (the detail's), or the table's keys
// with the activity pane's.
func (m *Model) ShortHelp() []key.Binding {
	if m.detail.shown {
		return m.detail.ShortHelp()
	}
	k := m.keys
	sort := k.SortNext
	sort.SetHelp("s/S/o", "sort")
	return enabled(append(append([]key.Binding{k.Help, k.Quit, k.Detail, k.Filter, sort, k.Anomalies},
		m.activity.ShortHelp()...), k.Acquire, k.ForceRelease, k.Pause)...)
}

// FullHelp is the `?` help, one column per group: moving, viewing (with the activity
// pane's key), the actions, and the console's.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.keys
	view := append([]key.Binding{k.Detail, k.Back, k.Filter, k.Anomalies}, m.activity.ShortHelp()...)
	return [][]key.Binding{
		enabled(k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom),
		enabled(append(view, k.SortNext, k.SortPrev, k.Reverse)...),
		enabled(k.Acquire, k.Extend, k.Release, k.ForceRelease),
		enabled(k.Pause, k.Refresh, k.Help, k.Quit),
	}
}

// DialogKeyMap is the keys of the dialogs (acquire, extend, force-release, results,
// quit). Dialogs exist only when actions are bound.
type DialogKeyMap struct {
	Confirm     key.Binding
	Cancel      key.Binding
	NextField   key.Binding
	PrevField   key.Binding
	Toggle      key.Binding // keep-alive on/off
	SwitchMode  key.Binding // force-release: observed value / any value
	ReleaseQuit key.Binding
	KeepQuit    key.Binding
}

// DefaultDialogKeyMap returns the dialogs' keys.
func DefaultDialogKeyMap() DialogKeyMap {
	return DialogKeyMap{
		Confirm:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "confirm")),
		Cancel:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		NextField:   key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab", "next field")),
		PrevField:   key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab", "previous field")),
		Toggle:      key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "toggle")),
		SwitchMode:  key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "observed value / any value")),
		ReleaseQuit: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "release and quit")),
		KeepQuit:    key.NewBinding(key.WithKeys("k"), key.WithHelp("k", "keep and quit")),
	}
}

// helpKeys adapts a list of bindings to help.KeyMap.
type helpKeys []key.Binding

func (h helpKeys) ShortHelp() []key.Binding  { return h }
func (h helpKeys) FullHelp() [][]key.Binding { return [][]key.Binding{h} }

func enabled(bs ...key.Binding) []key.Binding {
	out := bs[:0:0]
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}
