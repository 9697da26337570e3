package main

import (
	"fmt"
	"strings"
)

// groupValues is SET and GET of a large string value, without
// persistence.
const groupValues = "values"

// valueKey is the key the values group writes and reads.
const valueKey = "blob"

// valueSize is the size of the value the values group writes and reads.
const valueSize = 100 << 10

// values measures requests far larger than a heartbeat on one pair of
// servers without persistence: SET of one key to a 100 KB value, one
// request a connection at a time, then GET of it.
func (s *suite) values() error {
	value := strings.Repeat("v", valueSize)
	set := newTemplate([]string{"SET", valueKey, value}, 0)
	get := newTemplate([]string{"GET", valueKey}, 0)
	g := Group{Title: "Large values", Throughput: true, Note: fmt.Sprintf("`SET %s <%d KB value>`, then `GET %s`, %d connections, pipeline 1: what a request far larger than a heartbeat costs on the way in (reading, parsing, the log entry, the store's copy) and out. Both servers run without persistence, as in the heartbeats group; a row has no target.", valueKey, valueSize>>10, valueKey, s.cfg.Conns)}
	return s.throughputGroup(noPersistence, g, []workload{
		{name: "SET of a 100 KB value, pipeline 1", reqs: both(set), pipeline: 1},
		{name: "GET of a 100 KB value, pipeline 1", reqs: both(get), pipeline: 1},
	})
}
