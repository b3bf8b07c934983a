//go:build unix && !linux

package lockrun

import "syscall"

// sysProcAttr puts the command in a process group of its own.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
