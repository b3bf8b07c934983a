package main

import (
	"fmt"
	"io"
)

func runAcquire(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runAcquire: not built yet")
	return exitFailure
}

func runExtend(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runExtend: not built yet")
	return exitFailure
}

func runRelease(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runRelease: not built yet")
	return exitFailure
}
