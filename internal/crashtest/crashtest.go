//go:build !crashtest

// Package crashtest marks the places where the end-to-end tests make the console
// panic, to check that the terminal is restored and the trace printed whatever the
// goroutine. In a normal build Point does nothing; the binary the tests build with
// `-tags crashtest` panics at the point named in its environment (see
// crashtest_on.go), so that the product itself carries no crash switch.
package crashtest

// Point is where a crashtest build may panic; here it does nothing.
func Point(string) {}
