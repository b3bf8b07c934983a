package demo

import "syscall"

// procAttr makes a demo redis-server die with the demo, however the demo ends.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
