package cli

import (
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	tea "charm.land/bubbletea/v2"
)

// crash is what the console does with a panic in any code it runs: Update, View, every
// command and every goroutine it starts. The first panic is kept with its trace and
// the program killed, which restores the terminal (alternate screen off, cooked mode,
// cursor shown); only then is the trace printed, and the process exits with
// exitcode.Internal. Bubbletea's own recovery is not enough: a command run inside a
// tea.Batch prints its trace while the terminal is still in the alternate screen (and
// so it is lost), and a goroutine of the console's own is outside it.
type crash struct {
	prog *tea.Program // set before the program runs

	mu    sync.Mutex
	value any
	stack []byte
}

// crashMsg asks the guarded model to kill the program: sent, not called, so that a
// panic before the program has set the terminal up waits for it.
type crashMsg struct{}

// guard, deferred first thing in a function the console runs, takes a panic instead
// of letting it kill the process with the terminal in raw mode.
func (c *crash) guard() {
	if rec := recover(); rec != nil {
		c.take(rec, debug.Stack())
	}
}

// take keeps the first panic and asks the program to stop.
func (c *crash) take(rec any, stack []byte) {
	c.mu.Lock()
	first := c.stack == nil
	if first {
		c.value, c.stack = rec, stack
	}
	c.mu.Unlock()
	if first {
		go c.prog.Send(crashMsg{})
	}
}

// report prints the panic kept, if any, and says whether there was one. It is called
// once the program has returned, with the terminal restored.
func (c *crash) report(w io.Writer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stack == nil {
		return false
	}
	fmt.Fprintf(w, "redlockctl: internal error, please report it: panic: %v\n\n%s", c.value, c.stack)
	return true
}

// cmd returns cmd guarded, and the commands of a batch it returns as well (bubbletea
// runs those in goroutines of their own).
func (c *crash) cmd(cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() (msg tea.Msg) {
		defer c.guard()
		msg = cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			guarded := make(tea.BatchMsg, len(b))
			for i, x := range b {
				guarded[i] = c.cmd(x)
			}
			msg = guarded
		}
		return msg
	}
}

// guardedModel runs a model's Init, Update, View and commands under a crash guard.
type guardedModel struct {
	m tea.Model
	c *crash
}

func (g guardedModel) Init() (cmd tea.Cmd) {
	defer g.c.guard()
	return g.c.cmd(g.m.Init())
}

func (g guardedModel) Update(msg tea.Msg) (next tea.Model, cmd tea.Cmd) {
	next = g // what a panic leaves
	defer g.c.guard()
	if _, ok := msg.(crashMsg); ok {
		go g.c.prog.Kill()
		return g, nil
	}
	m, cmd := g.m.Update(msg)
	return guardedModel{m, g.c}, g.c.cmd(cmd)
}

func (g guardedModel) View() (v tea.View) {
	defer g.c.guard()
	return g.m.View()
}
