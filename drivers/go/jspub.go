package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// js_pub: pubs publishers, each on its own connection with its own
// JetStream context of the jetstream package, publish into the stream
// msgbench created (subjects = the scenario's subject).
//
//   - sync: js.Publish, which waits for each PubAck (at most timeout_ms,
//     the context's default timeout) before the next publish.
//   - async: js.PublishMsgAsync with WithPublishAsyncMaxPending(in_flight);
//     PubAcks come to the ack handler (WithPublishAsyncAckHandler), failures
//     to the error handler, and WithPublishAsyncTimeout(timeout_ms) bounds
//     how long one may stay unanswered.
//
// Each PubAck is timed from its publish. In async mode PublishMsgAsync
// itself waits while in_flight publishes are outstanding; to keep that wait
// out of the next message's time, the driver takes a slot of its own
// window (also in_flight, released in the handlers, after the library has
// released its own) before it reads the clock, so the library's window is
// never full when PublishMsgAsync is called. The async API keeps the
// *nats.Msg until its ack (for retries and the handlers), so each message
// gets its own payload buffer; the ack handler finds the publish time by
// that pointer.
type jsPub struct {
	sc      *scenario
	ctl     *control
	errs    *errorCounts
	clients []*jsPublisher
	hist    *latencyHist
	acks    ackSet
}

type jsPublisher struct {
	id    int
	nc    *nats.Conn
	js    jetstream.JetStream
	sent  atomic.Int64
	acked atomic.Int64
	// failed counts publishes that ended in an error; acked+failed is
	// the number answered.
	failed atomic.Int64
	span   span

	// async only: the publish time of each outstanding message, and the
	// driver's window.
	mu      sync.Mutex
	pending map[*nats.Msg]int64
	window  chan struct{}
}

func setupJSPub(sc *scenario, ctl *control) (runner, error) {
	jp := &jsPub{
		sc:   sc,
		ctl:  ctl,
		errs: newErrorCounts("request_timeout", "no_responders", "disconnected", "js_other"),
		hist: newLatencyHist(),
	}
	for c := 0; c < sc.Pubs; c++ {
		nc, err := connect(sc, fmt.Sprintf("js publisher %d", c), jp.errs)
		if err != nil {
			jp.close()
			return nil, &connectError{fmt.Errorf("js publisher %d: connect %s: %w", c, sc.Server, err)}
		}
		p := &jsPublisher{id: c, nc: nc}
		jp.clients = append(jp.clients, p)
		opts := []jetstream.JetStreamOpt{jetstream.WithDefaultTimeout(sc.timeout())}
		if sc.JS.Mode == "async" {
			p.pending = make(map[*nats.Msg]int64, sc.InFlight)
			p.window = make(chan struct{}, sc.InFlight)
			opts = append(opts,
				jetstream.WithPublishAsyncMaxPending(sc.InFlight),
				jetstream.WithPublishAsyncTimeout(sc.timeout()),
				jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
					jp.onAck(p, m, ack)
				}),
				jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
					jp.onErr(p, m, err)
				}),
			)
		}
		if p.js, err = jetstream.New(nc, opts...); err != nil {
			jp.close()
			return nil, fmt.Errorf("js publisher %d: jetstream context: %w", c, err)
		}
	}
	return jp, nil
}

func (jp *jsPub) notes() string {
	if jp.sc.JS.Mode == "async" {
		return "jetstream PublishMsgAsync, max pending = in_flight, ack and error handlers; one payload buffer per message (the async API keeps the message until its ack)"
	}
	return "jetstream Publish, each waiting for its PubAck"
}

func (jp *jsPub) totals() (sent, received int64) {
	for _, p := range jp.clients {
		sent += p.sent.Load()
		received += p.acked.Load()
	}
	return sent, received
}

func (jp *jsPub) close() {
	for _, p := range jp.clients {
		p.nc.Close()
	}
}

func (jp *jsPub) run() (result, error) {
	var wg sync.WaitGroup
	for _, p := range jp.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if jp.sc.JS.Mode == "async" {
				jp.publishAsync(p)
			} else {
				jp.publishSync(p)
			}
		}()
	}
	wg.Wait()
	if jp.sc.JS.Mode == "async" {
		// Wait for the outstanding acks (each ends within timeout_ms, by
		// WithPublishAsyncTimeout).
		jp.ctl.drain(func() bool {
			for _, p := range jp.clients {
				if p.acked.Load()+p.failed.Load() < p.sent.Load() {
					return false
				}
			}
			return true
		}, func() int64 {
			var n int64
			for _, p := range jp.clients {
				n += p.acked.Load() + p.failed.Load()
			}
			return n
		})
	}
	return jp.result()
}

// pace waits for message i's due time when the scenario has a rate.
func (jp *jsPub) pace(p *jsPublisher, i int64) bool {
	if jp.sc.Rate > 0 {
		return jp.ctl.waitUntil(schedule{rate: jp.sc.Rate, clients: jp.sc.Pubs}.due(p.id, i))
	}
	return !jp.ctl.isHalted()
}

func (jp *jsPub) publishSync(p *jsPublisher) {
	sc, ctl := jp.sc, jp.ctl
	data := payload(sc.Size)
	ctx := context.Background() // the context's default timeout applies
	limit := sc.perClientLimit()
	for i := int64(0); i < limit && jp.pace(p, i); i++ {
		if sc.stamped() {
			putStamp(data, uint64(i), p.id)
		}
		p.sent.Add(1)
		t0 := ctl.now()
		p.span.mark(t0)
		ack, err := p.js.Publish(ctx, sc.Subject, data)
		t1 := ctl.now()
		if err != nil {
			p.failed.Add(1)
			jp.errs.count(err)
			if p.nc.IsClosed() {
				fmt.Fprintf(os.Stderr, "msgbench-driver-go: js publisher %d: %v\n", p.id, err)
				return
			}
			continue
		}
		p.span.mark(t1)
		jp.acks.add(ack)
		p.acked.Add(1)
		jp.record(t0, t1)
	}
}

func (jp *jsPub) publishAsync(p *jsPublisher) {
	sc, ctl := jp.sc, jp.ctl
	template := payload(sc.Size)
	limit := sc.perClientLimit()
	// A slot frees within timeout_ms (the ack timeout); twice that
	// without one means the client is stuck.
	stuck := time.NewTimer(2 * sc.timeout())
	defer stuck.Stop()
	for i := int64(0); i < limit && jp.pace(p, i); i++ {
		stuck.Reset(2 * sc.timeout())
		select {
		case p.window <- struct{}{}:
		case <-ctl.haltCh:
			return
		case <-stuck.C:
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: js publisher %d: no ack for %v\n", p.id, 2*sc.timeout())
			return
		}
		data := make([]byte, len(template))
		copy(data, template)
		if sc.stamped() {
			putStamp(data, uint64(i), p.id)
		}
		m := &nats.Msg{Subject: sc.Subject, Data: data}
		p.sent.Add(1)
		t0 := ctl.now()
		p.span.mark(t0)
		p.mu.Lock()
		p.pending[m] = t0
		p.mu.Unlock()
		if _, err := p.js.PublishMsgAsync(m); err != nil {
			p.mu.Lock()
			delete(p.pending, m)
			p.mu.Unlock()
			<-p.window
			p.failed.Add(1)
			jp.errs.count(err)
			if p.nc.IsClosed() {
				fmt.Fprintf(os.Stderr, "msgbench-driver-go: js publisher %d: %v\n", p.id, err)
				return
			}
		}
	}
}

// take removes an outstanding message and returns its publish time.
func (p *jsPublisher) take(m *nats.Msg) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t0, ok := p.pending[m]
	if ok {
		delete(p.pending, m)
	}
	return t0, ok
}

func (jp *jsPub) onAck(p *jsPublisher, m *nats.Msg, ack *jetstream.PubAck) {
	t1 := jp.ctl.now()
	t0, ok := p.take(m)
	if !ok {
		return
	}
	p.span.mark(t1)
	jp.acks.add(ack)
	jp.record(t0, t1)
	p.acked.Add(1)
	<-p.window
}

func (jp *jsPub) onErr(p *jsPublisher, m *nats.Msg, err error) {
	if _, ok := p.take(m); !ok {
		return
	}
	jp.errs.count(err)
	p.failed.Add(1)
	<-p.window
}

func (jp *jsPub) record(t0, t1 int64) {
	if t0 >= jp.sc.WarmupMs*1e6 {
		jp.hist.record(t1 - t0)
	}
}

func (jp *jsPub) result() (result, error) {
	var res result
	var sent int64
	for _, p := range jp.clients {
		n := p.sent.Load()
		sent += n
		res.Clients = append(res.Clients, clientSpan{
			Role: "pub", ID: p.id, Msgs: n, Bytes: n * int64(jp.sc.Size), Seconds: p.span.seconds(false),
		})
	}
	// Nothing is received in js_pub: what reached the stream is in js,
	// for msgbench to reconcile with the stream.
	res.Delivery = delivery{Sent: sent, Accounting: "none"}
	res.Errors = jp.errs.snapshot()
	var err error
	if res.Latency, err = jp.hist.summary(); err != nil {
		return result{}, err
	}
	res.JS = jp.acks.summary()
	return res, nil
}

// ackSet collects acknowledged stream sequences from all publishers: the
// distinct ones, those acknowledged again, and the range. Sequences are
// kept in a bitset from the first one acknowledged (they are dense: the
// stream numbers its messages one by one); the rare one below it, or
// absurdly far above, goes to a map.
type ackSet struct {
	mu         sync.Mutex
	base       uint64
	bits       []uint64
	extra      map[uint64]struct{}
	acked      int64
	duplicates int64
	first      uint64
	last       uint64
}

// maxAckSpan bounds the bitset (2^32 bits is 512 MiB).
const maxAckSpan = 1 << 32

func (a *ackSet) add(ack *jetstream.PubAck) {
	seq := ack.Sequence
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.acked == 0 && a.duplicates == 0 {
		a.base, a.first, a.last = seq, seq, seq
	}
	if a.seen(seq) {
		a.duplicates++
		return
	}
	a.acked++
	a.first = min(a.first, seq)
	a.last = max(a.last, seq)
}

// seen marks seq and reports whether it was marked before.
func (a *ackSet) seen(seq uint64) bool {
	if seq < a.base || seq-a.base >= maxAckSpan {
		if a.extra == nil {
			a.extra = map[uint64]struct{}{}
		}
		_, ok := a.extra[seq]
		a.extra[seq] = struct{}{}
		return ok
	}
	off := seq - a.base
	w, bit := off/64, uint64(1)<<(off%64)
	for w >= uint64(len(a.bits)) {
		a.bits = append(a.bits, make([]uint64, max(len(a.bits), 1024))...)
	}
	old := a.bits[w]&bit != 0
	a.bits[w] |= bit
	return old
}

func (a *ackSet) summary() *jsSummary {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &jsSummary{Acked: a.acked, DuplicateAcks: a.duplicates}
	if a.acked > 0 {
		s.FirstSeq, s.LastSeq = a.first, a.last
	}
	return s
}
