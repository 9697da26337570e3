package main

import (
	"testing"
	"time"

	replica "github.com/presenced/presenced/cluster"
)

// TestLogAloneMeasuresEveryMode runs the log alone briefly in each
// persistence mode: every write must be committed (measureLogAlone checks
// the node's counters against the writes), and as each writer has one
// write in flight at a time, an entry carries at least one command and at
// most one per writer.
func TestLogAloneMeasuresEveryMode(t *testing.T) {
	const writers = 8
	for _, m := range persistenceModes {
		t.Run(m.name, func(t *testing.T) {
			r, err := measureLogAlone(logAloneSpec{appendOnly: m.appendOnly, fsync: m.fsync,
				writers: writers, duration: 300 * time.Millisecond, space: 1 << 20, seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if r.perSecond <= 0 || r.perEntry < 1 || r.perEntry > writers {
				t.Errorf("%+v: want a positive rate and 1 to %d commands an entry", r, writers)
			}
		})
	}
}

// TestPersistenceModesMatchTheirFlags checks that each mode's settings for
// the log alone are the ones its presenced flags select.
func TestPersistenceModesMatchTheirFlags(t *testing.T) {
	for _, m := range persistenceModes {
		flags := map[string]string{"--appendonly": "yes", "--appendfsync": replica.FsyncAlways}
		for i := 0; i+1 < len(m.presenced); i += 2 {
			flags[m.presenced[i]] = m.presenced[i+1]
		}
		if got := flags["--appendonly"] == "yes"; got != m.appendOnly {
			t.Errorf("%s: appendOnly %v, flags say %v", m.name, m.appendOnly, got)
		}
		if flags["--appendfsync"] != m.fsync {
			t.Errorf("%s: fsync %q, flags say %q", m.name, m.fsync, flags["--appendfsync"])
		}
	}
}
