package inspect

import (
	"strconv"
	"strings"
)

// FenceSuffix ends the key of a resource's fence counter: `<key>:fence`.
const FenceSuffix = ":fence"

// ParseValue splits a redlock value `<owner>#<32 lowercase hex>` or
// `<owner>#<32 hex>#<token>` into its owner and fence token (0 when unfenced). ok is
// false for values written by other libraries, which are shown as opaque values.
func ParseValue(v string) (owner string, token int64, ok bool) {
	// The owner may itself contain '#': split from the right.
	rest := v
	if i := strings.LastIndexByte(rest, '#'); i >= 0 && !isHex32(rest[i+1:]) {
		t, err := strconv.ParseInt(rest[i+1:], 10, 64)
		if err != nil || t <= 0 || rest[i+1] == '+' || (len(rest[i+1:]) > 1 && rest[i+1] == '0') {
			return "", 0, false
		}
		token, rest = t, rest[:i]
	}
	i := strings.LastIndexByte(rest, '#')
	if i <= 0 || !isHex32(rest[i+1:]) {
		return "", 0, false
	}
	return rest[:i], token, true
}

func isHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseCounter reads a fence counter's value; ok is false when it is not an integer.
func parseCounter(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}
