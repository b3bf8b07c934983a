package lockrun

import "syscall"

// sysProcAttr puts the command in a process group of its own and, should this process
// die without stopping it (SIGKILL, a crash), has the kernel kill it: nobody would
// extend the lock any more.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
