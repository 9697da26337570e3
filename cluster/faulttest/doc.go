// Package faulttest holds the fault test of presenced's replication: it
// runs a three-node cluster of real presenced processes, injects faults
// (SIGKILL and restart, SIGSTOP and SIGCONT, network partitions through
// TCP proxies between the nodes' raft addresses, leadership hand-overs
// asked with SENTINEL FAILOVER and REPLICAOF) while clients write and
// read through every node, and checks the recorded history for
// linearizability with porcupine, the final state for lost writes, and
// the replicas for identical digests. A second test stops the leader
// while clients write through it and checks that, resumed, it never
// answers a read with a value from before the leader that replaced it.
// The package has no code outside its tests; run it with `make chaos`.
package faulttest
