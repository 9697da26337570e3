//go:build !linux

package server

// eventLoop is not used on this platform: every connection is served by
// a goroutine of its own.
type eventLoop struct{}

func (s *Server) startLoops() error          { return nil }
func (s *Server) stopLoops()                 {}
func (s *Server) serveFromLoop(*client) bool { return false }

// shutdownInLoop reports false: no loop serves a connection.
func (s *Server) shutdownInLoop(*client) bool { return false }
