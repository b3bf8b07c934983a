package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckGlob reports what is wrong with a glob pattern (* ? [abc] [^a-z] \x), or nil.
func CheckGlob(pattern string) error {
	if pattern == "" {
		return errors.New("empty pattern")
	}
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return fmt.Errorf("pattern %q: '[' at %d is never closed", pattern, i)
			}
			i += end + 1
		}
	}
	return nil
}

// MatchGlob reports whether name matches the Redis-style glob pattern.
func MatchGlob(pattern, name string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 0 && pattern[0] == '*' {
				pattern = pattern[1:]
			}
			if pattern == "" {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if MatchGlob(pattern, name[i:]) {
					return true
				}
			}
			return false
		case '?':
			if name == "" {
				return false
			}
			_, size := utf8.DecodeRuneInString(name)
			pattern, name = pattern[1:], name[size:]
		case '[':
			if name == "" {
				return false
			}
			end := strings.IndexByte(pattern[1:], ']')
			if end < 0 {
				if name[0] != '[' {
					return false
				}
				pattern, name = pattern[1:], name[1:]
				continue
			}
			set := pattern[1 : end+1]
			neg := strings.HasPrefix(set, "^")
			if neg {
				set = set[1:]
			}
			c := name[0]
			in := false
			for i := 0; i < len(set); i++ {
				if i+2 < len(set) && set[i+1] == '-' {
					if set[i] <= c && c <= set[i+2] {
						in = true
					}
					i += 2
				} else if set[i] == c {
					in = true
				}
			}
			if in == neg {
				return false
			}
			pattern, name = pattern[end+2:], name[1:]
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if name == "" || name[0] != pattern[0] {
				return false
			}
			pattern, name = pattern[1:], name[1:]
		}
	}
	return name == ""
}
