package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
)

// Limits checked before a config file is decoded: a config is a few kilobytes, and the
// TOML decoder's cost grows steeply with nesting (a 40 KB file of nested inline tables
// took seconds and gigabytes), so anything far past them is refused unread.
const (
	// MaxFileSize is the largest config file read.
	MaxFileSize = 1 << 20
	// MaxNesting is the deepest nesting of arrays and inline tables accepted.
	MaxNesting = 16
)

// readFile reads a config file, refusing one over MaxFileSize or nested deeper than
// MaxNesting before any decoding.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d KiB: not a redlockctl config (nothing was decoded)", path, MaxFileSize>>10)
	}
	if line, ok := nestedTooDeep(data); ok {
		return nil, fmt.Errorf("%s:%d: arrays or inline tables nested deeper than %d: not a redlockctl config (nothing was decoded)", path, line, MaxNesting)
	}
	return data, nil
}

// nestedTooDeep reports the line where '[' and '{' outside strings and comments nest
// deeper than MaxNesting.
func nestedTooDeep(data []byte) (int, bool) {
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			line++
		case '"', '\'':
			q := []byte{c}
			if bytes.HasPrefix(data[i:], []byte{c, c, c}) {
				q = []byte{c, c, c}
			}
			i += len(q)
			for i < len(data) && !bytes.HasPrefix(data[i:], q) {
				if data[i] == '\\' && c == '"' {
					i++
				} else if data[i] == '\n' {
					line++
				}
				i++
			}
			i += len(q) - 1
		case '[', '{':
			if depth++; depth > MaxNesting {
				return line, true
			}
		case ']', '}':
			depth = max(0, depth-1)
		}
	}
	return 0, false
}

var reIncompatible = regexp.MustCompile(`TOML value has type (\S+?); destination has type (\S+)`)

// plainTypeError says, for a key whose value has the wrong type, what was written and
// what is wanted, with an example, in words rather than Go type names.
func plainTypeError(key, msg string) string {
	m := reIncompatible.FindStringSubmatch(msg)
	if m == nil {
		return "a value this key cannot take (" + plainWords(msg) + "); want " + wantFor(key)
	}
	return "got " + tomlKind(m[1]) + "; want " + wantFor(key)
}

// plainWords removes what would name a Go type from a decoder's message.
func plainWords(s string) string {
	for _, r := range []struct{ from, to string }{
		{"int64", "a number"}, {"float64", "a number"}, {"[]interface {}", "a list"},
		{"map[string]interface {}", "a table"}, {"interface {}", "a value"}, {"toml: ", ""},
	} {
		s = strings.ReplaceAll(s, r.from, r.to)
	}
	return s
}

func tomlKind(goType string) string {
	switch {
	case goType == "int64":
		return "a whole number"
	case goType == "float64":
		return "a number with a fraction"
	case goType == "string":
		return "text in quotes"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map"):
		return "a table"
	case strings.Contains(goType, "Time") || strings.Contains(goType, "time"):
		return "a date or time"
	}
	return "a value of another kind"
}

// durationKeys are the string keys that hold durations.
var durationKeys = map[string]bool{
	"default_ttl": true, "node_timeout": true, "retry_delay": true, "restart_guard": true,
	"poll_interval": true, "timeout": true, "max_ttl": true,
}

// wantFor says what a key takes, with an example, from the file's schema.
func wantFor(key string) string {
	parts := strings.Split(key, ".")
	last := parts[len(parts)-1]
	if key == "masters" {
		return "[[masters]] tables, one per master, such as\n  [[masters]]\n  addr = \"127.0.0.1:6379\""
	}
	t := fieldType(reflect.TypeFor[file](), parts)
	switch {
	case t == nil:
		return "a value of the kind docs/configuration.md shows"
	case durationKeys[last]:
		return "a duration in quotes, such as \"1s\" or \"500ms\""
	case last == "addr":
		return "\"host:port\" in quotes, such as \"127.0.0.1:6379\""
	}
	switch t.Kind() {
	case reflect.String:
		return "text in quotes, such as \"...\""
	case reflect.Int:
		return "a whole number without quotes, such as 1000"
	case reflect.Float64:
		return "a number without quotes, such as 0.01"
	case reflect.Bool:
		return "true or false, without quotes"
	case reflect.Slice, reflect.Pointer:
		return "a list of strings, such as [\"lock:*\"]"
	}
	return "a value of the kind docs/configuration.md shows"
}

// fieldType follows TOML key parts through the struct tags of t.
func fieldType(t reflect.Type, parts []string) reflect.Type {
	for _, p := range parts {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			if t.Elem().Kind() != reflect.Struct {
				break
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("toml") == p {
				next = t.Field(i).Type
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	return t
}
