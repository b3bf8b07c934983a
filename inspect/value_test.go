package inspect

import "testing"

func TestParseValue(t *testing.T) {
	hex := "0123456789abcdef0123456789abcdef"
	tests := []struct {
		in    string
		owner string
		token int64
		ok    bool
	}{
		{"web-1:4242#" + hex, "web-1:4242", 0, true},
		{"web-1:4242#" + hex + "#17", "web-1:4242", 17, true},
		{"a#b#" + hex, "a#b", 0, true},
		{"a#b#" + hex + "#9", "a#b", 9, true},
		{"#" + hex, "", 0, false},                                 // empty owner
		{"w#" + "0123456789ABCDEF0123456789abcdef", "", 0, false}, // upper-case hex
		{"w#" + hex[:31], "", 0, false},
		{"w#" + hex + "#", "", 0, false},
		{"w#" + hex + "#-3", "", 0, false},
		{"w#" + hex + "#07", "", 0, false},
		{"w#" + hex + "#x", "", 0, false},
		{"d2FyZG9uZzEyMw==", "", 0, false}, // redsync base64
		{"550e8400-e29b-41d4-a716-446655440000", "", 0, false},
		{"", "", 0, false},
		{"\x00\xff#" + hex, "\x00\xff", 0, true},
	}
	for _, tt := range tests {
		owner, token, ok := ParseValue(tt.in)
		if owner != tt.owner || token != tt.token || ok != tt.ok {
			t.Errorf("ParseValue(%q) = %q, %d, %v; want %q, %d, %v", tt.in, owner, token, ok, tt.owner, tt.token, tt.ok)
		}
	}
}
