package locks

import "strings"

// Value shapes shared by several decoders.

// isHex reports whether s is non-empty lowercase hex.
func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isUUID reports whether s is a UUID in canonical lowercase text form
// (8-4-4-4-12 hex digits) with the RFC 4122 variant, as Java's UUID.toString, .NET's
// Guid.ToString() and Python's str(uuid) write it.
func isUUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	if !isHex(s[:8]) || !isHex(s[9:13]) || !isHex(s[14:18]) || !isHex(s[19:23]) || !isHex(s[24:]) {
		return false
	}
	return strings.IndexByte("89ab", s[19]) >= 0
}

// uuidVersion is the version nibble of a canonical UUID (isUUID true).
func uuidVersion(s string) byte { return s[14] - '0' }

// base64 alphabets.
const (
	b64Std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
)

// isBase64 reports whether s is the canonical unpadded encoding of n bytes in alphabet
// (the bits past the last byte are zero, as every encoder writes them).
func isBase64(s, alphabet string, n int) bool {
	if len(s) != (n*8+5)/6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b64Digit(alphabet, s[i]) < 0 {
			return false
		}
	}
	if spare := len(s)*6 - n*8; spare > 0 {
		last := b64Digit(alphabet, s[len(s)-1])
		if last&(1<<spare-1) != 0 {
			return false
		}
	}
	return true
}

// b64Digit is the value of c in a base64 alphabet (b64Std or b64URL: they differ in
// their last two characters only), or -1 when c is not in it.
func b64Digit(alphabet string, c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == alphabet[62]:
		return 62
	case c == alphabet[63]:
		return 63
	}
	return -1
}

// isAlnum reports whether s is non-empty ASCII letters and digits.
func isAlnum(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
