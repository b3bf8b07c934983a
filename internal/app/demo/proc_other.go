//go:build !linux

package demo

import "syscall"

// procAttr: the demo stops its servers when it stops (no parent-death signal here).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
