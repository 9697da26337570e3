//go:build !linux

package server

// anonHugePages returns 0: transparent huge pages are Linux's.
func anonHugePages() int64 { return 0 }
