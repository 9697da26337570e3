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
