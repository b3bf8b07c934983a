package main

import (
	"fmt"
	"io"
)

func runConsole(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runConsole: not built yet")
	return exitFailure
}

func runDefault(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "redlockctl: runDefault: not built yet")
	return exitFailure
}
