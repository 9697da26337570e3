//go:build linux

package server

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// anonHugePages returns the bytes of anonymous transparent huge pages the
// process uses, as Redis's LATENCY DOCTOR reads them, from
// /proc/self/smaps_rollup; 0 when it cannot tell.
func anonHugePages() int64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("AnonHugePages:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// totalSystemMemory returns the machine's memory in bytes, or 0 when it
// cannot tell.
func totalSystemMemory() int64 {
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit)
}
