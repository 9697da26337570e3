//go:build !linux

package proctest

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent death
// signal; the caller must stop its children itself.
func setParentDeathSignal(*exec.Cmd) {}
