package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errorCounts counts errors by msgbench's error kinds. Errors are rare, so
// a mutex is enough.
type errorCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

func newErrorCounts(kinds ...string) *errorCounts {
	e := &errorCounts{n: map[string]int64{}}
	for _, k := range kinds {
		e.n[k] = 0
	}
	return e
}

func (e *errorCounts) add(kind string, n int64) {
	e.mu.Lock()
	e.n[kind] += n
	e.mu.Unlock()
}

func (e *errorCounts) count(err error) { e.add(errorKind(err), 1) }

func (e *errorCounts) snapshot() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int64, len(e.n))
	for k, v := range e.n {
		out[k] = v
	}
	return out
}

// JetStream API error codes with a msgbench error kind of their own.
const (
	jsCodeStreamNotFound    = 10059
	jsCodeWrongLastSequence = 10071
	jsCodeStreamFull        = 10077 // "maximum messages exceeded" (discard new)
)

// errorKind maps a nats.go error to msgbench's error kinds; what has no
// msgbench name is "other".
func errorKind(err error) string {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrSlowConsumer):
		return "slow_consumer"
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return "no_responders"
	case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout):
		return "request_timeout"
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrStaleConnection),
		errors.Is(err, io.EOF):
		return "disconnected"
	case errors.Is(err, nats.ErrMaxPayload):
		return "max_payload"
	case errors.Is(err, nats.ErrAuthorization):
		return "authorization"
	case errors.Is(err, nats.ErrPermissionViolation):
		return "permissions_violation"
	case errors.Is(err, nats.ErrBadSubject):
		return "invalid_subject"
	case errors.As(err, &apiErr):
		switch apiErr.ErrorCode {
		case jsCodeStreamNotFound:
			return "js_stream_not_found"
		case jsCodeWrongLastSequence:
			return "js_wrong_last_sequence"
		case jsCodeStreamFull:
			return "js_stream_full"
		}
		return "js_other"
	}
	return "other"
}

// connect opens one connection for one client. It does not reconnect: a
// broken connection must show in the result (as "disconnected" and as lost
// messages), not be papered over by the reconnect buffer. Asynchronous
// errors (slow consumer, permissions) are counted in errs.
func connect(sc *scenario, name string, errs *errorCounts) (*nats.Conn, error) {
	return nats.Connect(sc.Server,
		nats.Name("msgbench-driver-go "+name),
		nats.Timeout(sc.connectTimeout()),
		nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			errs.count(err)
			fmt.Fprintf(os.Stderr, "msgbench-driver-go %s: %v\n", name, err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			// nil when the driver closes the connection itself.
			if err != nil {
				errs.add("disconnected", 1)
				fmt.Fprintf(os.Stderr, "msgbench-driver-go %s: disconnected: %v\n", name, err)
			}
		}),
	)
}

// conns closes the connections it holds.
type conns []*nats.Conn

func (cs conns) close() {
	for _, nc := range cs {
		if nc != nil {
			nc.Close()
		}
	}
}

// connectError marks a failure to reach the server (protocol error kind
// "connect").
type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }
