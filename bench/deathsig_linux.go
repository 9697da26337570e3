package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill the server if the benchmark
// dies without stopping it.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
