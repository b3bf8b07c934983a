package main

import (
	"fmt"
	"io"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runDemo: not built yet")
	return exitFailure
}
