package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// pubsub: subs subscriptions, each on its own connection, then pubs
// publishers, each on its own connection, publishing as fast as the library
// allows (or on the rate's schedule), each flushing once at the end.
//
// Publishing is nc.Publish, which nats.go buffers: it copies the message
// into the connection's write buffer and its flusher goroutine writes the
// buffer out, so a tight loop of Publish calls is the library's fast path
// (its documentation and its own benchmarks publish this way and call
// Flush once at the end). The payload buffer is reused: Publish has copied
// it by the time it returns.
//
// Subscribing is nc.Subscribe with an async handler. nats.go's reader
// goroutine appends each message to the subscription's pending list and one
// delivery goroutine per subscription calls the handler, so reading the
// socket never waits for the handler. ChanSubscribe is not faster (a
// channel send per message instead of the list) and drops a message as soon
// as its channel is full; SubscribeSync adds a NextMsg call (a lock and a
// condition wait) per message. The async handler is the documented default
// and the fastest of the three.
type pubsub struct {
	sc   *scenario
	ctl  *control
	errs *errorCounts

	pubConns conns
	subConns conns
	subs     []*nats.Subscription

	// Publisher p has sent pubSent[p] messages; incremented before the
	// publish, so a subscriber never sees a sequence at or past it.
	pubSent  []*atomic.Int64
	pubSpans []span
	sinks    []*sink
}

// sink is one subscriber's state. The handler runs on the subscription's
// delivery goroutine; mu guards the accounting against the final read.
type sink struct {
	mu   sync.Mutex
	r    *deliveryLog
	span span
	// received and unique mirror the log's counts for progress and
	// for the end of the drain.
	received atomic.Int64
	unique   atomic.Int64
}

// Pending limits of a subscription: no message count limit and 1 GiB of
// payload. The defaults (500k messages, 64 MiB) let a publisher that
// outruns the handler for a moment make nats.go drop messages as a slow
// consumer; with these, a drop means the subscriber really fell 1 GiB
// behind.
const (
	subPendingMsgs  = -1
	subPendingBytes = 1 << 30
)

func setupPubSub(sc *scenario, ctl *control) (runner, error) {
	ps := &pubsub{
		sc:       sc,
		ctl:      ctl,
		errs:     newErrorCounts("slow_consumer", "disconnected"),
		pubSent:  make([]*atomic.Int64, sc.Pubs),
		pubSpans: make([]span, sc.Pubs),
	}
	for p := range ps.pubSent {
		ps.pubSent[p] = new(atomic.Int64)
	}
	for s := 0; s < sc.Subs; s++ {
		nc, err := connect(sc, fmt.Sprintf("sub %d", s), ps.errs)
		if err != nil {
			ps.close()
			return nil, &connectError{fmt.Errorf("subscriber %d: connect %s: %w", s, sc.Server, err)}
		}
		ps.subConns = append(ps.subConns, nc)
		k := &sink{r: newDeliveryLog(sc.stamped(), ps.pubSent)}
		ps.sinks = append(ps.sinks, k)
		sub, err := nc.Subscribe(sc.Subject, func(m *nats.Msg) {
			t := ctl.now()
			k.mu.Lock()
			isNew := k.r.record(m.Data)
			k.mu.Unlock()
			if isNew {
				k.unique.Add(1)
			}
			k.received.Add(1)
			k.span.mark(t)
		})
		if err == nil {
			err = sub.SetPendingLimits(subPendingMsgs, subPendingBytes)
		}
		if err == nil {
			// The interest must be at the server before anyone publishes.
			err = nc.FlushTimeout(sc.connectTimeout())
		}
		if err != nil {
			ps.close()
			return nil, &connectError{fmt.Errorf("subscriber %d: subscribe %s: %w", s, sc.Subject, err)}
		}
		ps.subs = append(ps.subs, sub)
	}
	for p := 0; p < sc.Pubs; p++ {
		nc, err := connect(sc, fmt.Sprintf("pub %d", p), ps.errs)
		if err != nil {
			ps.close()
			return nil, &connectError{fmt.Errorf("publisher %d: connect %s: %w", p, sc.Server, err)}
		}
		ps.pubConns = append(ps.pubConns, nc)
	}
	return ps, nil
}

func (ps *pubsub) notes() string {
	return "nc.Publish (buffered by the library's flusher), one Flush per publisher at the end; " +
		"async Subscribe handlers with pending limits of 1 GiB and no message limit"
}

func (ps *pubsub) totals() (sent, received int64) {
	for _, s := range ps.pubSent {
		sent += s.Load()
	}
	for _, k := range ps.sinks {
		received += k.received.Load()
	}
	return sent, received
}

func (ps *pubsub) close() {
	ps.pubConns.close()
	ps.subConns.close()
}

func (ps *pubsub) run() (result, error) {
	var wg sync.WaitGroup
	for p, nc := range ps.pubConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps.publish(p, nc)
		}()
	}
	wg.Wait()

	var total int64
	for _, s := range ps.pubSent {
		total += s.Load()
	}
	ps.ctl.drain(func() bool {
		for _, k := range ps.sinks {
			if k.unique.Load() < total {
				return false
			}
		}
		return true
	}, func() int64 {
		_, received := ps.totals()
		return received
	})
	// Stop deliveries before the final read.
	for i, sub := range ps.subs {
		if n, err := sub.Dropped(); err == nil && n > 0 {
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: subscriber %d: nats.go dropped %d messages (slow consumer)\n", i, n)
		}
		_ = sub.Unsubscribe()
	}
	return ps.result(), nil
}

// publish is publisher p's loop: bounded by the message count and by the
// run's halt (duration over, stop, or maxCountedRun).
func (ps *pubsub) publish(p int, nc *nats.Conn) {
	sc, ctl := ps.sc, ps.ctl
	sent, sp := ps.pubSent[p], &ps.pubSpans[p]
	data := payload(sc.Size)
	limit := sc.perClientLimit()
	paced := sc.Rate > 0
	sched := schedule{rate: sc.Rate, clients: sc.Pubs}
	stamped := sc.stamped()
	for i := int64(0); i < limit; i++ {
		if paced {
			if !ctl.waitUntil(sched.due(p, i)) {
				break
			}
		} else if ctl.isHalted() {
			break
		}
		if stamped {
			putStamp(data, uint64(i), p)
		}
		if i == 0 {
			sp.mark(ctl.now())
		}
		sent.Add(1)
		if err := nc.Publish(sc.Subject, data); err != nil {
			sent.Add(-1)
			ps.errs.count(err)
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: publisher %d: publish %d: %v\n", p, i, err)
			break
		}
	}
	// The one flush: the buffered messages go out and the server has
	// processed them when the PONG comes back.
	if sent.Load() > 0 {
		if err := nc.FlushTimeout(sc.timeout()); err != nil {
			ps.errs.add(flushErrorKind(err), 1)
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: publisher %d: flush: %v\n", p, err)
		}
		sp.mark(ctl.now())
	}
}

func flushErrorKind(err error) string {
	if errors.Is(err, nats.ErrTimeout) {
		return "flush_timeout"
	}
	return errorKind(err)
}

func (ps *pubsub) result() result {
	sent := make([]int64, len(ps.pubSent))
	var res result
	for p, s := range ps.pubSent {
		sent[p] = s.Load()
		res.Clients = append(res.Clients, clientSpan{
			Role: "pub", ID: p, Msgs: sent[p], Bytes: sent[p] * int64(ps.sc.Size),
			Seconds: ps.pubSpans[p].seconds(false),
		})
	}
	// Held until the end: a handler may still be finishing a message.
	rs := make([]*deliveryLog, len(ps.sinks))
	for i, k := range ps.sinks {
		k.mu.Lock()
		defer k.mu.Unlock()
		rs[i] = k.r
		res.Clients = append(res.Clients, clientSpan{
			Role: "sub", ID: i, Msgs: k.r.received, Bytes: k.r.bytes,
			Seconds: k.span.seconds(true),
		})
		if k.r.foreign > 0 {
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: subscriber %d: %d messages without this run's stamp\n", i, k.r.foreign)
		}
	}
	res.Delivery = summarize(ps.sc.stamped(), sent, rs)
	res.Errors = ps.errs.snapshot()
	return res
}

// payload is a message body of size bytes (a letter pattern; the stamp, if
// any, is written over its first 16 bytes).
func payload(size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}
