package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
)

// listenUnix opens the unix socket of unixsocket, or returns nil without
// one. A file already at its path, left by a node that did not stop, is
// removed first, as Redis removes it; the socket gets unixsocketperm's
// permissions, unless 0.
func (s *Server) listenUnix(cfg Config) (net.Listener, error) {
	if cfg.UnixSocket == "" {
		return nil, nil
	}
	if err := os.Remove(cfg.UnixSocket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("server: unixsocket %s: %w", cfg.UnixSocket, err)
	}
	ln, err := net.Listen("unix", cfg.UnixSocket)
	if err != nil {
		return nil, err
	}
	if cfg.UnixSocketPerm != 0 {
		if err := os.Chmod(cfg.UnixSocket, cfg.UnixSocketPerm); err != nil {
			ln.Close()
			return nil, fmt.Errorf("server: unixsocketperm: %w", err)
		}
	}
	return ln, nil
}

// ParseUnixSocketPerm reads unixsocketperm's octal permissions, e.g. 700.
func ParseUnixSocketPerm(v string) (os.FileMode, error) {
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("unixsocketperm %q is not octal permissions such as 700", v)
	}
	return os.FileMode(n), nil
}

// socketPath is the path of the unix socket.
func (c *client) socketPath() string { return c.s.settings.current().UnixSocket }

// peerAddr is the address of nc's client as Redis shows it: host:port,
// or for a client of the unix socket the socket's path and port 0.
func (c *client) peerAddr(nc net.Conn) string {
	if c.unix {
		return c.socketPath() + ":0"
	}
	return nc.RemoteAddr().String()
}

// localAddr is the address nc's client connected to, as peerAddr shows
// addresses.
func (c *client) localAddr(nc net.Conn) string {
	if c.unix {
		return c.socketPath() + ":0"
	}
	return nc.LocalAddr().String()
}
