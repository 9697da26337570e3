//go:build !linux

package redisserver

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent death
// signal; Close must then be called to stop the server.
func setParentDeathSignal(*exec.Cmd) {}
