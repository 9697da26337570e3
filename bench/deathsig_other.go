//go:build !linux

package main

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent death
// signal; the benchmark stops its servers itself.
func setParentDeathSignal(*exec.Cmd) {}
