package report

import (
	"strings"
	"testing"
)

func TestDisplay(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  string
	}{
		{"plain", 10, "plain"},
		{"\x00\xffa\n", 20, `\x00\xffa\n`},
		{"0123456789abc", 10, "0123456..."},
		{"héllo wörld", 8, "héllo..."},
		{strings.Repeat("\x01", 1000), 12, `\x01\x01\...`},
	}
	for _, tt := range tests {
		if got := Display(tt.in, tt.width); got != tt.want {
			t.Errorf("Display(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}
