package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
)

// requestTimeout is the timeout of every single request, as an ordinary
// application would set it.
const requestTimeout = 2 * time.Second

type requestResult struct {
	Mode      string  `json:"mode"`
	Count     int64   `json:"count"`
	Seconds   float64 `json:"seconds"`
	ReqPerSec float64 `json:"req_per_sec"`
	P50       int64   `json:"p50_ns"`
	P99       int64   `json:"p99_ns"`
	Timeouts  int     `json:"timeouts"`
}

// runRequest measures closed-loop request/reply with one requester: a
// responder on its own connection answers every request with the request's
// payload, and the requester sends cfg.msgs requests one after the other
// with nc.Request, recording each round trip. Count is the number of
// requests answered in time; requests per second are those divided by the
// time of the whole loop (timeouts included).
func runRequest(cfg config) (requestResult, error) {
	respConn, err := connect(cfg.url, "ref-responder")
	if err != nil {
		return requestResult{}, fmt.Errorf("connect responder: %w", err)
	}
	defer respConn.Close()
	if _, err := respConn.Subscribe(cfg.subject, func(m *nats.Msg) {
		if err := m.Respond(m.Data); err != nil {
			fmt.Fprintf(os.Stderr, "ref request: respond: %v\n", err)
		}
	}); err != nil {
		return requestResult{}, fmt.Errorf("subscribe: %w", err)
	}
	if err := respConn.FlushTimeout(waitTimeout); err != nil {
		return requestResult{}, fmt.Errorf("responder flush: %w", err)
	}

	reqConn, err := connect(cfg.url, "ref-requester")
	if err != nil {
		return requestResult{}, fmt.Errorf("connect requester: %w", err)
	}
	defer reqConn.Close()

	data := payload(cfg.size)
	hist := hdrhistogram.New(histMin, histMax, histSigFigs)
	timeouts := 0
	start := time.Now()
	for i := 0; i < cfg.msgs; i++ {
		t0 := time.Now()
		_, err := reqConn.Request(cfg.subject, data, requestTimeout)
		rtt := time.Since(t0)
		switch {
		case err == nil:
			if err := hist.RecordValue(int64(rtt)); err != nil {
				return requestResult{}, fmt.Errorf("record %v: %w", rtt, err)
			}
		case errors.Is(err, nats.ErrTimeout):
			timeouts++
		default:
			return requestResult{}, fmt.Errorf("request %d: %w", i, err)
		}
	}
	elapsed := time.Since(start)
	if timeouts > 0 {
		fmt.Fprintf(os.Stderr, "ref request: %d of %d requests timed out after %v\n", timeouts, cfg.msgs, requestTimeout)
	}
	n := hist.TotalCount()
	return requestResult{
		Mode:      "request",
		Count:     n,
		Seconds:   elapsed.Seconds(),
		ReqPerSec: rate(int(n), elapsed),
		P50:       hist.ValueAtQuantile(50),
		P99:       hist.ValueAtQuantile(99),
		Timeouts:  timeouts,
	}, nil
}
