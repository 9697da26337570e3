//go:build unix && !linux

package faulttest

import "syscall"

// procAttr is nil: only Linux can tie a child's life to its parent's.
func procAttr() *syscall.SysProcAttr { return nil }
