package config

import "testing"

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"*", "anything/at:all", true},
		{"billing:*", "billing:nightly", true},
		{"billing:*", "bill", false},
		{"job-?", "job-7", true},
		{"job-?", "job-17", false},
		{"job-[0-3]", "job-2", true},
		{"job-[^0-3]", "job-2", false},
		{"a\\*b", "a*b", true},
		{"a\\*b", "axb", false},
		{"*:nightly", "billing:nightly", true},
		{"", "", true},
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.pat, tt.name); got != tt.want {
			t.Errorf("MatchGlob(%q, %q) = %v", tt.pat, tt.name, got)
		}
	}
}
