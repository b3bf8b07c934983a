package poll

import "strconv"

// parseCounter reads a fence counter's value; ok is false when it is not an integer.
func parseCounter(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}
