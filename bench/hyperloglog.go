package main

import "fmt"

// groupHyperLogLog is PFADD and PFCOUNT, without persistence.
const groupHyperLogLog = "hyperloglog"

// hllKey is the HyperLogLog the hyperloglog group fills and counts.
const hllKey = "online:hll"

// hyperloglog measures the recipe's HyperLogLog cross-check on one pair
// of servers without persistence, as the heartbeats group measures
// SETBIT: PFADD of the heartbeats' ids into one key, then PFCOUNT of it.
func (s *suite) hyperloglog() error {
	pfadd := newTemplate([]string{"PFADD", hllKey}, 1)
	pfcount := newTemplate([]string{"PFCOUNT", hllKey}, 0)
	g := Group{Title: "HyperLogLog", Throughput: true, Note: fmt.Sprintf("`PFADD %s <random id>`, ids uniform in [0, %s): the key turns dense within the first run, and from then on most PFADDs change no register, as heartbeats of users already counted (presenced answers those on the read path, without a log entry, as Redis leaves them out of its AOF); then `PFCOUNT %s`, whose count both servers keep cached in the key while nothing changes it (presenced answers those on the read path too). Both servers run without persistence, as in the heartbeats group, under its bound.", hllKey, count(s.cfg.Space), hllKey)}
	return s.throughputGroup(noPersistence, g, []workload{
		{name: "PFADD, pipeline 64", reqs: both(pfadd), pipeline: 64, random: true, target: targetHeartbeat},
		{name: "PFADD, pipeline 1", reqs: both(pfadd), pipeline: 1, random: true, target: targetHeartbeat},
		{name: "PFCOUNT of one key, pipeline 64", reqs: both(pfcount), pipeline: 64, target: targetHeartbeat},
	})
}
