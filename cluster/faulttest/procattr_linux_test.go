//go:build linux

package faulttest

import "syscall"

// procAttr has the kernel kill a node if the test process dies without
// cleaning up.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
