//go:build !unix

package server

import "strings"

// infoCPU writes INFO's CPU section, empty where the process's processor
// time is not known.
func (s *Server) infoCPU(b *strings.Builder) {
	b.WriteString("# CPU\r\n")
}
