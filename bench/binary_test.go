package main

// The tests run a presenced binary that TestMain builds with `go build`,
// which Go's test cache cannot see into: importing the server the binary
// is built from ties a cached result to that code, so that a change to it
// runs the tests again.
import _ "github.com/presenced/presenced/server"
