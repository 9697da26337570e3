// Package proto is presenced's view of the Redis protocol: the command
// table (names, arity, flags, key positions, syntax), the RESP request
// parser with Redis's limits, reply encoding, and Redis's error texts.
// It holds no state of its own.
package proto
