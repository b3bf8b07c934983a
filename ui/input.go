package ui

import (
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
)

// newInput returns a focused one-line field (bubbles/textinput) set up for the console:
// a static cursor (no blink timer, so an idle console sends itself no messages), no
// colours of its own (the console's styles and NO_COLOR decide), and no clipboard key:
// paste arrives as the terminal's bracketed paste, so no key reads the system clipboard.
// The placeholder shows only while the field is not focused and empty.
func newInput(prompt, placeholder string) input {
	ti := textinput.New()
	ti.Prompt = prompt
	st := textinput.Styles{}
	st.Cursor.Blink = false
	st.Focused.Placeholder = lipgloss.NewStyle().Faint(true)
	st.Blurred.Placeholder = st.Focused.Placeholder
	ti.SetStyles(st)
	ti.KeyMap.Paste.SetEnabled(false)
	ti.KeyMap.AcceptSuggestion.SetEnabled(false)
	ti.KeyMap.NextSuggestion.SetEnabled(false)
	ti.KeyMap.PrevSuggestion.SetEnabled(false)
	ti.Focus()
	return input{Model: ti, placeholder: placeholder}
}

// input is a textinput whose placeholder hides while it has the focus, so that a
// focused empty field shows only its prompt and cursor.
type input struct {
	textinput.Model
	placeholder string
}

// Focus gives the field the keyboard.
func (in *input) Focus() { in.Model.Focus() }

// Update applies a key press or paste to a focused field; other messages are ignored.
func (in *input) Update(msg any) {
	in.Model, _ = in.Model.Update(msg)
}

// setWidth bounds the cells the value may use; longer values scroll with the cursor.
func (in *input) setWidth(w int) { in.Model.SetWidth(w) }

// View renders the prompt and value, with the cursor as a reversed cell when focused.
func (in *input) View() string {
	m := in.Model
	if !m.Focused() && m.Value() == "" {
		m.Placeholder = in.placeholder
	}
	return m.View()
}
