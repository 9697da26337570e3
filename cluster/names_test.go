package cluster

import "testing"

func TestCheckNames(t *testing.T) {
	for id, ok := range map[string]bool{
		"n1": true, "node-1.eu_west": true, "nœud": true,
		"": false, "n 1": false, "n\t1": false, "n1\r\n": false, "n,1": false, "n=1": false, "n\x7f": false,
	} {
		if err := checkNodeID(id); (err == nil) != ok {
			t.Errorf("checkNodeID(%q) = %v", id, err)
		}
	}
	for addr, ok := range map[string]bool{
		"127.0.0.1:7101": true, "[::1]:7101": true, "node-2.internal:1": true, "h:65535": true,
		"": false, "notanaddr": false, "127.0.0.1": false, ":7101": false, "h:0": false, "h:65536": false,
		"h:-1": false, "h:x": false, "h:+1": false, "a b:1": false, "a,b:1": false, "h:1:2": false,
	} {
		if err := checkRaftAddr(addr); (err == nil) != ok {
			t.Errorf("checkRaftAddr(%q) = %v", addr, err)
		}
	}
}

func TestSameEndpoint(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"127.0.0.1:7001", "127.0.0.1:7001", true},
		{"localhost:7001", "127.0.0.1:7001", true},
		{"127.0.0.1:7001", ":7001", true},
		{"0.0.0.0:7001", "127.0.0.1:7001", true},
		{"[::]:7001", "[::1]:7001", true},
		{"127.0.0.1:7001", "127.0.0.1:7002", false},
		{"10.1.2.3:7001", "127.0.0.1:7001", false},
		{"10.1.2.3:7001", "10.1.2.4:7001", false},
		{"notanaddr", "notanaddr", false},
	} {
		if got := SameEndpoint(tc.a, tc.b); got != tc.same {
			t.Errorf("SameEndpoint(%q, %q) = %v", tc.a, tc.b, got)
		}
		if got := SameEndpoint(tc.b, tc.a); got != tc.same {
			t.Errorf("SameEndpoint(%q, %q) = %v", tc.b, tc.a, got)
		}
	}
}
