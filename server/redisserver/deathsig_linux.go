package redisserver

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill the server if the process that
// started it dies without calling Close (a test binary that times out).
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
