package history

import (
	"errors"
	"fmt"
	"strconv"
)

var (
	// ErrFuture is matched (errors.Is) by a *RangeError for a time after the
	// newest point held.
	ErrFuture = errors.New("history: time is after the newest point held")
	// ErrClosed is returned by calls on a closed History.
	ErrClosed = errors.New("history: closed")
	// ErrTooManySamples is returned by Range when the step gives more than MaxSamples samples.
	ErrTooManySamples = fmt.Errorf("history: the step gives more than %d samples", MaxSamples)
)

// MaxSamples bounds the number of samples one Range call returns.
const MaxSamples = 1000000

// RangeError reports a time outside the range held: before Oldest (thinned
// away by retention, or before recording began) or after Newest. Its text
// reads well as a Redis error reply, e.g.
//
//	history: 1700000000 is before the oldest point held (1700000100 .. 1700003600)
//	history: 1700009000.5 is after the newest point held (1700000100 .. 1700003600)
//	history: 1700009000 is after the newest point held (nothing held yet)
//
// Times are unix seconds, with milliseconds when not whole.
type RangeError struct {
	T, Oldest, Newest int64 // unix ms
}

// Error implements error.
func (e *RangeError) Error() string {
	where := "before the oldest"
	if e.T > e.Newest {
		where = "after the newest"
	}
	held := "nothing held yet"
	if e.Newest > 0 {
		held = FormatTime(e.Oldest) + " .. " + FormatTime(e.Newest)
	}
	return fmt.Sprintf("history: %s is %s point held (%s)", FormatTime(e.T), where, held)
}

// Is makes errors.Is(err, ErrFuture) true for a time after the newest point.
func (e *RangeError) Is(target error) bool {
	return target == ErrFuture && e.T > e.Newest
}

// FormatTime formats unix ms as unix seconds, with three decimals when the
// time is not a whole second.
func FormatTime(ms int64) string {
	s := strconv.FormatInt(ms/1000, 10)
	if frac := ms % 1000; frac != 0 {
		if frac < 0 {
			frac = -frac
			if ms > -1000 {
				s = "-" + s
			}
		}
		s += fmt.Sprintf(".%03d", frac)
	}
	return s
}
