module github.com/presenced/presenced

go 1.26.8

require (
	github.com/RoaringBitmap/roaring/v2 v2.30.0
	github.com/anishathalye/porcupine v1.3.1
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/hashicorp/go-hclog v1.6.3
	github.com/hashicorp/raft v1.8.0
	github.com/hashicorp/raft-boltdb/v2 v2.3.1
	github.com/prometheus/client_golang v1.25.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidwall/btree v1.8.2
	github.com/tidwall/redcon v1.6.4
	go.etcd.io/bbolt v1.3.12
	golang.org/x/sys v0.48.0
)

require (
	github.com/armon/go-metrics v0.4.1 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/boltdb/bolt v1.3.1 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-metrics v0.7.0 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.5 // indirect
	github.com/hashicorp/golang-lru v1.0.2 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// raft-boltdb/v2 v2.3.1 imports go-metrics/compat, which go-metrics v0.7.0
// (required by raft v1.8.0) removed; v0.6.1 still has it and raft builds
// against it. Drop this once a raft-boltdb release carries the upstream fix.
replace github.com/hashicorp/go-metrics => github.com/hashicorp/go-metrics v0.6.1
