package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// request: pubs requesters, each on its own connection, against the echo
// responders msgbench runs (queue group "msgbench").
//
// Each request is nc.Request, nats.go's documented request/reply call. It
// is not a new inbox subscription per request: the connection keeps one
// wildcard reply subscription and hands each reply to the waiting caller by
// its token, and Request is safe to call from many goroutines at once. So a
// requester keeps in_flight requests outstanding with in_flight goroutines,
// each doing one Request at a time. An own inbox with PublishRequest and a
// handler would re-implement exactly that muxing outside the library; using
// Request measures the path applications use, and it also tells a timeout
// (nats.ErrTimeout) from no responders (nats.ErrNoResponders) for us.
//
//   - rate 0, closed loop: each of the in_flight workers sends its next
//     request as soon as its reply (or error) is back.
//   - rate > 0, open loop: a dispatcher hands each request to a free
//     worker at its due time (k/rate over all requesters); if all in_flight
//     are outstanding it waits for one, and that wait shows in the corrected
//     latency, which is measured from the due time. The uncorrected one is
//     measured from the actual send.
//
// Replies are echoes, so their stamp says which request they answer, and
// lost = requests sent - distinct requests answered. duplicated and
// reordered are null: Request hands each caller the first reply to its
// token and silently drops any other, so a duplicate never reaches the
// driver, and the order in which concurrent callers resume is the
// scheduler's, not the order of the replies on the wire.
type request struct {
	sc      *scenario
	ctl     *control
	errs    *errorCounts
	clients []*requester

	corrected   *latencyHist
	uncorrected *latencyHist
}

// requester is one connection and its workers.
type requester struct {
	id      int
	nc      *nats.Conn
	sent    atomic.Int64
	replies atomic.Int64
	pubSpan span
	subSpan span

	mu sync.Mutex // guards r
	r  *deliveryLog
}

func setupRequest(sc *scenario, ctl *control) (runner, error) {
	rq := &request{
		sc:          sc,
		ctl:         ctl,
		errs:        newErrorCounts("request_timeout", "no_responders", "disconnected"),
		corrected:   newLatencyHist(),
		uncorrected: newLatencyHist(),
	}
	for c := 0; c < sc.Pubs; c++ {
		nc, err := connect(sc, fmt.Sprintf("requester %d", c), rq.errs)
		if err != nil {
			rq.close()
			return nil, &connectError{fmt.Errorf("requester %d: connect %s: %w", c, sc.Server, err)}
		}
		q := &requester{id: c, nc: nc}
		// Replies carry the requester's own stamps (index c), each a
		// request index below the count limit. (Not below sent: with
		// several workers a request may go out before one with a lower
		// index has been counted.)
		limit := new(atomic.Int64)
		limit.Store(sc.perClientLimit())
		limits := make([]*atomic.Int64, c+1)
		for i := range limits {
			limits[i] = limit
		}
		q.r = newDeliveryLog(sc.stamped(), limits)
		rq.clients = append(rq.clients, q)
	}
	return rq, nil
}

func (rq *request) notes() string {
	if rq.sc.Rate > 0 {
		return "nc.Request from in_flight goroutines per connection, fed on the schedule (open loop)"
	}
	return "nc.Request from in_flight goroutines per connection (closed loop)"
}

func (rq *request) totals() (sent, received int64) {
	for _, q := range rq.clients {
		sent += q.sent.Load()
		received += q.replies.Load()
	}
	return sent, received
}

func (rq *request) close() {
	for _, q := range rq.clients {
		q.nc.Close()
	}
}

// job is one request: its index and its due time (ns from start, or -1 in
// a closed loop).
type job struct {
	i   int64
	due int64
}

func (rq *request) run() (result, error) {
	var wg sync.WaitGroup
	for _, q := range rq.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rq.runRequester(q)
		}()
	}
	wg.Wait()
	// Every Request has returned (reply, timeout or error): nothing is
	// left to drain.
	return rq.result()
}

func (rq *request) runRequester(q *requester) {
	sc, ctl := rq.sc, rq.ctl
	limit := sc.perClientLimit()
	// A dead connection ends this requester's run.
	var dead atomic.Bool
	var wg sync.WaitGroup
	if sc.Rate == 0 {
		var next atomic.Int64
		for w := 0; w < sc.InFlight; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := payload(sc.Size)
				for !ctl.isHalted() && !dead.Load() {
					i := next.Add(1) - 1
					if i >= limit {
						return
					}
					rq.do(q, buf, job{i: i, due: -1}, &dead)
				}
			}()
		}
		wg.Wait()
		return
	}
	jobs := make(chan job)
	for w := 0; w < sc.InFlight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := payload(sc.Size)
			for j := range jobs {
				rq.do(q, buf, j, &dead)
			}
		}()
	}
	sched := schedule{rate: sc.Rate, clients: sc.Pubs}
dispatch:
	for i := int64(0); i < limit && !dead.Load(); i++ {
		due := sched.due(q.id, i)
		if !ctl.waitUntil(due) {
			break
		}
		select {
		case jobs <- job{i: i, due: due}:
		case <-ctl.haltCh:
			break dispatch
		}
	}
	close(jobs)
	wg.Wait()
}

// do sends one request and waits for its reply (at most timeout_ms).
func (rq *request) do(q *requester, buf []byte, j job, dead *atomic.Bool) {
	sc, ctl := rq.sc, rq.ctl
	if sc.stamped() {
		putStamp(buf, uint64(j.i), q.id)
	}
	q.sent.Add(1)
	t0 := ctl.now()
	q.pubSpan.mark(t0)
	reply, err := q.nc.Request(sc.Subject, buf, sc.timeout())
	t1 := ctl.now()
	if err != nil {
		rq.errs.count(err)
		if q.nc.IsClosed() || errors.Is(err, nats.ErrConnectionClosed) {
			if !dead.Swap(true) {
				fmt.Fprintf(os.Stderr, "msgbench-driver-go: requester %d: %v\n", q.id, err)
			}
		}
		return
	}
	q.replies.Add(1)
	q.subSpan.mark(t1)
	q.mu.Lock()
	q.r.record(reply.Data)
	q.mu.Unlock()
	from := t0
	if j.due >= 0 {
		from = j.due
	}
	if from < rq.warmup() {
		return
	}
	rq.corrected.record(t1 - from)
	rq.uncorrected.record(t1 - t0)
}

func (rq *request) warmup() int64 { return rq.sc.WarmupMs * 1e6 }

func (rq *request) result() (result, error) {
	sc := rq.sc
	var res result
	d := delivery{Accounting: "count"}
	if sc.stamped() {
		d.Accounting = "exact"
	}
	for _, q := range rq.clients {
		sent := q.sent.Load()
		q.mu.Lock()
		got, unique := q.r.received, q.r.unique()
		res.Clients = append(res.Clients,
			clientSpan{Role: "pub", ID: q.id, Msgs: sent, Bytes: sent * int64(sc.Size), Seconds: q.pubSpan.seconds(false)},
			clientSpan{Role: "sub", ID: q.id, Msgs: got, Bytes: q.r.bytes, Seconds: q.subSpan.seconds(true)},
		)
		if q.r.foreign > 0 {
			fmt.Fprintf(os.Stderr, "msgbench-driver-go: requester %d: %d replies without the request's stamp\n", q.id, q.r.foreign)
		}
		q.mu.Unlock()
		d.Sent += sent
		d.Received += got
		d.Lost += max(0, sent-unique)
	}
	res.Delivery = d
	res.Errors = rq.errs.snapshot()
	var err error
	if res.Latency, err = rq.corrected.summary(); err != nil {
		return result{}, err
	}
	if res.LatencyUncorrected, err = rq.uncorrected.summary(); err != nil {
		return result{}, err
	}
	return res, nil
}
