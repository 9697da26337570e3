package main

import (
	"errors"
	"strconv"
	"time"
)

// trackingListener returns a job to run beside a target's runs: a client
// that tracks the keys under prefix in BCAST mode (Redis's client-side
// caching), its invalidations redirected to a second, subscribed
// connection, which reads them while the run lasts, as a RESP2 client
// library does. Its stop fails if no invalidation came.
func trackingListener(prefix string) func(t target) (func() error, error) {
	return func(t target) (func() error, error) {
		const timeout = 10 * time.Second
		sub, err := dial(t.addrs[0], timeout)
		if err != nil {
			return nil, err
		}
		tracker, err := dial(t.addrs[0], timeout)
		if err != nil {
			sub.close()
			return nil, err
		}
		id, err := sub.doInt(timeout, "CLIENT", "ID")
		if err == nil {
			_, err = sub.do(timeout, "SUBSCRIBE", "__redis__:invalidate")
		}
		if err == nil {
			_, err = tracker.do(timeout, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", prefix, "REDIRECT", strconv.FormatInt(id, 10))
		}
		if err == nil {
			err = sub.conn.SetDeadline(time.Time{})
		}
		if err != nil {
			sub.close()
			tracker.close()
			return nil, err
		}
		messages := 0
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if _, err := sub.rd.read(); err != nil {
					return // the connection closed at stop
				}
				messages++
			}
		}()
		return func() error {
			tracker.close()
			sub.close()
			<-done
			if messages == 0 {
				return errors.New("no invalidation reached the tracking client")
			}
			return nil
		}, nil
	}
}
