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
package store
