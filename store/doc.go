// Package store is presenced's deterministic state machine: sixteen
// databases of keys holding Redis strings (plain bytes, or a roaring
// bitmap plus a byte length when built by bit commands), key TTLs, and
// the commands that read and change them.
//
// The store has no network, no goroutines and no clock. Every change goes
// through Apply, which takes a batch of commands and the log time at
// which they happen; replaying the same batches at the same times on
// another replica gives the same state. Reads take the caller's time and
// change nothing.
//
// With a HistorySink set, Apply also records history, driven by log time
// like expiry so that every replica records the same points: the bit
// count of each recorded key at every 100 ms boundary where it changed,
// and its bitmap at every snapshot interval (see history.go).
package store
