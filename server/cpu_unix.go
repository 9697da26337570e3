//go:build unix

package server

import (
	"fmt"
	"strings"
	"syscall"
)

// infoCPU writes INFO's CPU section: the processor time the process and
// its waited-for children used, in seconds, as Redis reports it.
func (s *Server) infoCPU(b *strings.Builder) {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	fmt.Fprintf(b, "# CPU\r\nused_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\nused_cpu_sys_children:%.6f\r\nused_cpu_user_children:%.6f\r\n",
		seconds(self.Stime), seconds(self.Utime), seconds(children.Stime), seconds(children.Utime))
}

func seconds(t syscall.Timeval) float64 {
	return float64(t.Sec) + float64(t.Usec)/1e6
}
