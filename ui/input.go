package ui

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// input is a one-line text field: printable keys insert, backspace/delete, left/right,
// home/end (ctrl+a/ctrl+e), ctrl+u clears before the cursor, ctrl+w deletes a word.
// Paste arrives as tea.PasteMsg. It reads no clipboard and starts no timer.
type input struct {
	prompt      string
	placeholder string
	value       []rune
	pos         int
	focused     bool
	width       int // cells for the value; 0 = unbounded
}

func newInput(prompt, placeholder string) input {
	return input{prompt: prompt, placeholder: placeholder, focused: true}
}

func (in *input) Value() string { return string(in.value) }

func (in *input) SetValue(s string) {
	in.value = []rune(sanitizeInput(s))
	in.pos = len(in.value)
}

func (in *input) Focus() { in.focused = true }
func (in *input) Blur()  { in.focused = false }

func sanitizeInput(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, s)
}

func (in *input) insert(s string) {
	rs := []rune(sanitizeInput(s))
	if len(rs) == 0 {
		return
	}
	v := make([]rune, 0, len(in.value)+len(rs))
	v = append(v, in.value[:in.pos]...)
	v = append(v, rs...)
	v = append(v, in.value[in.pos:]...)
	in.value = v
	in.pos += len(rs)
}

// Update applies a key press or paste; other messages are ignored.
func (in *input) Update(msg tea.Msg) {
	if !in.focused {
		return
	}
	switch msg := msg.(type) {
	case tea.PasteMsg:
		in.insert(msg.Content)
	case tea.KeyPressMsg:
		switch msg.String() {
		case "backspace", "ctrl+h":
			if in.pos > 0 {
				in.value = append(in.value[:in.pos-1], in.value[in.pos:]...)
				in.pos--
			}
		case "delete", "ctrl+d":
			if in.pos < len(in.value) {
				in.value = append(in.value[:in.pos], in.value[in.pos+1:]...)
			}
		case "left", "ctrl+b":
			in.pos = max(0, in.pos-1)
		case "right", "ctrl+f":
			in.pos = min(len(in.value), in.pos+1)
		case "home", "ctrl+a":
			in.pos = 0
		case "end", "ctrl+e":
			in.pos = len(in.value)
		case "ctrl+u":
			in.value = append([]rune(nil), in.value[in.pos:]...)
			in.pos = 0
		case "ctrl+k":
			in.value = in.value[:in.pos]
		case "ctrl+w", "alt+backspace":
			i := in.pos
			for i > 0 && in.value[i-1] == ' ' {
				i--
			}
			for i > 0 && in.value[i-1] != ' ' {
				i--
			}
			in.value = append(in.value[:i], in.value[in.pos:]...)
			in.pos = i
		default:
			if msg.Text != "" && msg.Mod&^(tea.ModShift) == 0 {
				in.insert(msg.Text)
			}
		}
	}
}

var cursorStyle = lipgloss.NewStyle().Reverse(true)

// View renders prompt and value with the cursor as a reversed cell.
func (in *input) View() string {
	if len(in.value) == 0 && in.placeholder != "" && !in.focused {
		return in.prompt + in.placeholder
	}
	v := in.value
	pos := in.pos
	// Scroll so the cursor stays visible within width.
	if in.width > 0 && len(v) >= in.width {
		start := max(0, pos-in.width+1)
		end := min(len(v), start+in.width)
		v, pos = v[start:end], pos-start
	}
	if !in.focused {
		return in.prompt + clean(string(v))
	}
	under := " "
	after := ""
	if pos < len(v) {
		under = string(v[pos])
		after = string(v[pos+1:])
	}
	return in.prompt + clean(string(v[:pos])) + cursorStyle.Render(clean(under)) + clean(after)
}
