package proctest

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill the child if the process that
// started it dies without stopping it.
func setParentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
