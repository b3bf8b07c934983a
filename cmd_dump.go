package main

import (
	"fmt"
	"io"
)

func runDump(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runDump: not built yet")
	return exitFailure
}

func runDoctor(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runDoctor: not built yet")
	return exitFailure
}
