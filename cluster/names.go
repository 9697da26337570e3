package cluster

import (
	"net"
	"strconv"
	"strings"
)

// checkNodeID refuses an ID that cannot name a member: an empty one, or
// one with a space, a control character, ',' or '=', which would break
// the fields of RAFT INFO and INFO replication that list the members.
func checkNodeID(id string) error {
	if id == "" || strings.ContainsFunc(id, notInName) {
		return memberError("invalid node ID %q: an ID must not be empty or hold spaces, control characters, ',' or '='", id)
	}
	return nil
}

// checkRaftAddr refuses an address other nodes could not reach a member
// at: anything but host:port with a host and a port from 1 to 65535.
func checkRaftAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || p == 0 || host == "" || strings.ContainsFunc(host, notInName) {
		return memberError("invalid raft address %q: want host:port, the port from 1 to 65535", addr)
	}
	return nil
}

// notInName reports whether r may not appear in a node's ID or host.
func notInName(r rune) bool {
	return r <= ' ' || r == 0x7f || r == ',' || r == '='
}

// SameEndpoint reports whether the host:port addresses a and b reach the
// same listener of this host: the same port, and the same IP address, or
// a loopback address and the unspecified one a listener bound to all
// addresses has. Addresses that do not resolve are not the same.
func SameEndpoint(a, b string) bool {
	x, errA := net.ResolveTCPAddr("tcp", a)
	y, errB := net.ResolveTCPAddr("tcp", b)
	if errA != nil || errB != nil || x.Port != y.Port {
		return false
	}
	all := func(ip net.IP) bool { return ip == nil || ip.IsUnspecified() }
	return x.IP.Equal(y.IP) || all(x.IP) && (all(y.IP) || y.IP.IsLoopback()) || all(y.IP) && x.IP.IsLoopback()
}
