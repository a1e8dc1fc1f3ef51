package main

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// latency: one publisher at the scenario's rate, open loop, and one
// subscriber, each on its own connection to the same server (the
// scenario's pubs and subs are not used: the protocol fixes one of each).
//
// Message n is due n/rate seconds after start. The publisher waits for
// each due time (sleeping, then yielding for the last stretch) and never
// skips one; when late it sends at once. It keeps every actual send time in
// sendTimes, so the subscriber, in the same process and on the same
// monotonic clock, records per message
//
//	corrected   = receive - due
//	uncorrected = receive - actual send
//
// Messages due before warmup_ms are counted but not recorded. Which message
// arrived is read from the stamp (sequence, bytes 0..8); a payload under 16
// bytes has none, and then the n-th message received is taken to be
// message n (NATS keeps one publisher's order).
//
// Each message is an nc.Publish and nothing more: nats.go's flusher
// goroutine writes it out as soon as it is kicked, which is how the library
// sends a lone message promptly without a Flush round trip.
type latency struct {
	sc   *scenario
	ctl  *control
	errs *errorCounts

	pubConn, subConn *nats.Conn
	sub              *nats.Subscription

	sent      atomic.Int64
	sendTimes []atomic.Int64 // ns from start, by sequence
	pubSpan   span
	sched     schedule
	warmup    int64 // ns

	mu          sync.Mutex // guards the receiving side below
	r           *deliveryLog
	corrected   *latencyHist
	uncorrected *latencyHist
	subSpan     span
	received    atomic.Int64
	unique      atomic.Int64
}

// maxLatencyMsgs bounds the send-time table (8 bytes a message).
const maxLatencyMsgs = 50_000_000

func setupLatency(sc *scenario, ctl *control) (runner, error) {
	n := sc.perClientLimit()
	if sc.DurationMs != nil {
		n = int64(sc.Rate*float64(*sc.DurationMs)/1000) + 1
	}
	l := &latency{
		sc:          sc,
		ctl:         ctl,
		errs:        newErrorCounts("slow_consumer", "disconnected"),
		sendTimes:   make([]atomic.Int64, n),
		sched:       schedule{rate: sc.Rate, clients: 1},
		warmup:      sc.WarmupMs * 1e6,
		corrected:   newLatencyHist(),
		uncorrected: newLatencyHist(),
	}
	l.r = newDeliveryLog(sc.stamped(), []*atomic.Int64{&l.sent})

	var err error
	if l.subConn, err = connect(sc, "latency sub", l.errs); err != nil {
		return nil, &connectError{fmt.Errorf("subscriber: connect %s: %w", sc.Server, err)}
	}
	l.sub, err = l.subConn.Subscribe(sc.Subject, l.handle)
	if err == nil {
		err = l.sub.SetPendingLimits(subPendingMsgs, subPendingBytes)
	}
	if err == nil {
		err = l.subConn.FlushTimeout(sc.connectTimeout())
	}
	if err != nil {
		l.close()
		return nil, &connectError{fmt.Errorf("subscriber: subscribe %s: %w", sc.Subject, err)}
	}
	if l.pubConn, err = connect(sc, "latency pub", l.errs); err != nil {
		l.close()
		return nil, &connectError{fmt.Errorf("publisher: connect %s: %w", sc.Server, err)}
	}
	return l, nil
}

func (l *latency) notes() string {
	return "one nc.Publish per due time, sent by the library's flusher; async Subscribe handler"
}

func (l *latency) totals() (int64, int64) { return l.sent.Load(), l.received.Load() }

func (l *latency) close() {
	conns{l.pubConn, l.subConn}.close()
}

// handle is the subscriber's handler, on the subscription's delivery
// goroutine.
func (l *latency) handle(m *nats.Msg) {
	now := l.ctl.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := uint64(l.r.received) // arrival order, for unstamped payloads
	if s, _, ok := readStamp(m.Data); ok && l.sc.stamped() {
		seq = s
	}
	isNew := l.r.record(m.Data)
	l.received.Add(1)
	l.subSpan.mark(now)
	if !isNew || seq >= uint64(l.sent.Load()) {
		return // a duplicate (its latency is that of the first) or foreign
	}
	l.unique.Add(1)
	due := l.sched.due(0, int64(seq))
	if due < l.warmup {
		return
	}
	l.corrected.recordLocked(now - due)
	l.uncorrected.recordLocked(now - l.sendTimes[seq].Load())
}

func (l *latency) run() (result, error) {
	sc, ctl := l.sc, l.ctl
	data := payload(sc.Size)
	stamped := sc.stamped()
	n := int64(len(l.sendTimes))
	for i := int64(0); i < n; i++ {
		if !ctl.waitUntil(l.sched.due(0, i)) {
			break
		}
		if stamped {
			putStamp(data, uint64(i), 0)
		}
		t := ctl.now()
		l.sendTimes[i].Store(t)
		l.sent.Add(1)
		if err := l.pubConn.Publish(sc.Subject, data); err != nil {
			l.sent.Add(-1)
			l.errs.count(err)
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: latency: publish %d: %v\n", i, err)
			break
		}
		l.pubSpan.mark(t)
	}
	if l.sent.Load() > 0 {
		if err := l.pubConn.FlushTimeout(sc.timeout()); err != nil {
			l.errs.add(flushErrorKind(err), 1)
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: latency: flush: %v\n", err)
		}
	}
	sent := l.sent.Load()
	ctl.drain(func() bool { return l.unique.Load() >= sent }, l.received.Load)
	_ = l.sub.Unsubscribe()

	l.mu.Lock()
	defer l.mu.Unlock()
	res := result{
		Clients: []clientSpan{
			{Role: "pub", ID: 0, Msgs: sent, Bytes: sent * int64(sc.Size), Seconds: l.pubSpan.seconds(false)},
			{Role: "sub", ID: 0, Msgs: l.r.received, Bytes: l.r.bytes, Seconds: l.subSpan.seconds(true)},
		},
		Delivery: summarize(sc.stamped(), []int64{sent}, []*deliveryLog{l.r}),
		Errors:   l.errs.snapshot(),
	}
	var err error
	if res.Latency, err = l.corrected.summary(); err != nil {
		return result{}, err
	}
	if res.LatencyUncorrected, err = l.uncorrected.summary(); err != nil {
		return result{}, err
	}
	if c := l.corrected.clamped + l.uncorrected.clamped; c > 0 {
		fmt.Fprintf(os.Stderr, "msgbench-driver-go: latency: %d values outside 0 .. 1 h recorded at the nearer end\n", c)
	}
	return res, nil
}
