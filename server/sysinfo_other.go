//go:build !linux

package server

// anonHugePages returns 0: transparent huge pages are Linux's.
func anonHugePages() int64 { return 0 }

// totalSystemMemory returns 0: the machine's memory is read on Linux.
func totalSystemMemory() int64 { return 0 }
