package main

import (
	"errors"
	"strconv"
	"sync/atomic"
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
		var l *listener
		if err == nil {
			l, err = listen(sub)
		}
		if err != nil {
			sub.close()
			tracker.close()
			return nil, err
		}
		return func() error {
			tracker.close()
			if l.stop() == 0 {
				return errors.New("no invalidation reached the tracking client")
			}
			return nil
		}, nil
	}
}

// listener counts the pushes (messages, invalidations) a subscribed
// connection reads, as a client library reads them, until it is stopped.
type listener struct {
	c        *client
	messages atomic.Int64
	done     chan struct{}
}

// listen starts counting what the subscribed connection c reads.
func listen(c *client) (*listener, error) {
	if err := c.conn.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	l := &listener{c: c, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			if _, err := l.c.rd.read(); err != nil {
				return // the connection closed at stop
			}
			l.messages.Add(1)
		}
	}()
	return l, nil
}

// stop closes the connection and returns how many pushes it read.
func (l *listener) stop() int64 {
	l.c.close()
	<-l.done
	return l.messages.Load()
}
