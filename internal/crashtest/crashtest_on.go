//go:build crashtest

// Package crashtest marks the places where the end-to-end tests make the console
// panic. This file is built only with `-tags crashtest`: the binary then panics at
// the point named in REDLOCKCTL_CRASHTEST once the file named in
// REDLOCKCTL_CRASHTEST_ARM exists, so that a test can let the console come up first.
package crashtest

import (
	"os"
	"sync/atomic"
)

var (
	point = os.Getenv("REDLOCKCTL_CRASHTEST")
	arm   = os.Getenv("REDLOCKCTL_CRASHTEST_ARM")
	fired atomic.Bool
)

// Point panics when it is the point named in REDLOCKCTL_CRASHTEST and the arming file
// exists, once.
func Point(where string) {
	if where != point || arm == "" || fired.Load() {
		return
	}
	if _, err := os.Stat(arm); err != nil {
		return
	}
	if fired.CompareAndSwap(false, true) {
		panic("crashtest: injected panic at " + where)
	}
}
