package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
)

// The latency subcommand follows the method of nats-io's latency-tests
// tool, because that is what msgbench's latency figures are compared
// against:
//
//   - two connections to the same server, one publishing and one
//     subscribing;
//   - the publisher writes its wall clock (time.Now().UnixNano(), 8 bytes
//     little-endian) into the first 8 bytes of each payload, and the
//     subscriber records "now - that time" into an HDR histogram;
//   - the rate is steered by sleeping after every publish and nudging the
//     sleep by 5% up or down depending on whether the average rate so far
//     is above or below the target.
//
// The last point is the naive part: there is no schedule. A message that
// goes out late (a long sleep, a GC pause, a full socket) simply pushes
// every later message back, and the time it spent waiting to be sent is
// never counted. That is coordinated omission; msgbench's "corrected"
// figures measure from the scheduled send time instead, its "uncorrected"
// ones from the actual send time, like this tool.

// Histogram range: 1 ns .. 1 h, 3 significant figures.
const (
	histMin     = 1
	histMax     = int64(time.Hour)
	histSigFigs = 3
)

// drainTimeout is how long latency waits for messages still in flight
// after the publisher is done.
const drainTimeout = 5 * time.Second

type latencyConfig struct {
	url      string
	rate     float64
	duration time.Duration
	warmup   time.Duration
	size     int
	subject  string
}

type latencyResult struct {
	Mode       string  `json:"mode"`
	Count      int64   `json:"count"`
	P50        int64   `json:"p50_ns"`
	P90        int64   `json:"p90_ns"`
	P99        int64   `json:"p99_ns"`
	P999       int64   `json:"p999_ns"`
	Max        int64   `json:"max_ns"`
	ActualRate float64 `json:"actual_rate"`
	// Sent counts every message published, warm-up included; Lost is the
	// number of those that did not arrive within drainTimeout.
	Sent int64 `json:"sent"`
	Lost int64 `json:"lost"`
}

func parseLatencyFlags(args []string) (latencyConfig, error) {
	cfg, err := parseLatencyArgs(args)
	if err != nil {
		return latencyConfig{}, usageError{err}
	}
	return cfg, nil
}

func parseLatencyArgs(args []string) (latencyConfig, error) {
	var cfg latencyConfig
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&cfg.url, "url", "nats://127.0.0.1:4222", "server URL")
	fs.Float64Var(&cfg.rate, "rate", 1000, "target messages per second")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long to send, warm-up included")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "messages sent in this first part of the run are not recorded")
	fs.IntVar(&cfg.size, "size", 8, "payload size in bytes (at least 8, the send time)")
	fs.StringVar(&cfg.subject, "subject", "bench.lat", "subject to publish and subscribe on")
	if err := fs.Parse(args); err != nil {
		return latencyConfig{}, err
	}
	if fs.NArg() != 0 {
		return latencyConfig{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if !(cfg.rate > 0) {
		return latencyConfig{}, errors.New("-rate must be > 0")
	}
	if cfg.duration <= 0 {
		return latencyConfig{}, errors.New("-duration must be > 0")
	}
	if cfg.warmup < 0 || cfg.warmup >= cfg.duration {
		return latencyConfig{}, errors.New("-warmup must be >= 0 and shorter than -duration")
	}
	if cfg.size < 8 {
		return latencyConfig{}, errors.New("-size must be >= 8 (the send time)")
	}
	if err := checkSubject(cfg.subject); err != nil {
		return latencyConfig{}, err
	}
	return cfg, nil
}

// putSendTime writes a send time (ns since the Unix epoch) into the first
// 8 bytes of a payload, little-endian.
func putSendTime(p []byte, ns int64) {
	binary.LittleEndian.PutUint64(p, uint64(ns))
}

// sendTime reads the send time written by putSendTime; ok is false if the
// payload is too short to hold one.
func sendTime(p []byte) (ns int64, ok bool) {
	if len(p) < 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(p)), true
}

// pacer reproduces latency-tests' rate control: after each send, compare
// the average rate since the start with the target and move the sleep by
// 5% of itself (at least 1 ns) in the direction that corrects it.
type pacer struct {
	target float64
	delay  time.Duration
}

func newPacer(rate float64) *pacer {
	return &pacer{target: rate, delay: time.Duration(float64(time.Second) / rate)}
}

// next returns the sleep to take after `sent` messages in `elapsed`.
func (p *pacer) next(sent int64, elapsed time.Duration) time.Duration {
	r := 0.0
	if elapsed > 0 {
		r = float64(sent) / elapsed.Seconds()
	}
	adj := p.delay / 20
	if adj == 0 {
		adj = 1
	}
	if r < p.target {
		p.delay -= adj
	} else if r > p.target {
		p.delay += adj
	}
	if p.delay < 0 {
		p.delay = 0
	}
	return p.delay
}

// latencyRecorder is the subscriber side: it records the latency of every
// message sent at or after warmupEnd (ns since the epoch) and counts all
// messages received. The histogram is only touched under mu: the callback
// runs on nats.go's delivery goroutine and the result is read by main.
type latencyRecorder struct {
	warmupEnd  atomic.Int64
	received   atomic.Int64
	mu         sync.Mutex
	hist       *hdrhistogram.Histogram
	outOfRange int64 // negative (clock stepped back) or above histMax
	unstamped  int64 // payload too short to hold a send time
}

func newLatencyRecorder() *latencyRecorder {
	r := &latencyRecorder{hist: hdrhistogram.New(histMin, histMax, histSigFigs)}
	// Until the publisher sets the real end of the warm-up, record nothing.
	r.warmupEnd.Store(int64(^uint64(0) >> 1))
	return r
}

// record handles one message received at nowNs.
func (r *latencyRecorder) record(data []byte, nowNs int64) {
	r.received.Add(1)
	sent, ok := sendTime(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !ok:
		r.unstamped++
	case sent < r.warmupEnd.Load():
	default:
		if err := r.hist.RecordValue(nowNs - sent); err != nil {
			r.outOfRange++
		}
	}
}

func runLatency(cfg latencyConfig) (latencyResult, error) {
	rec := newLatencyRecorder()

	subConn, err := connect(cfg.url, "ref-lat-sub")
	if err != nil {
		return latencyResult{}, fmt.Errorf("connect subscriber: %w", err)
	}
	defer subConn.Close()
	sub, err := subConn.Subscribe(cfg.subject, func(m *nats.Msg) {
		rec.record(m.Data, time.Now().UnixNano())
	})
	if err != nil {
		return latencyResult{}, fmt.Errorf("subscribe: %w", err)
	}
	// Unlimited pending buffers: a message the client would drop is a
	// message whose latency goes unrecorded.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return latencyResult{}, fmt.Errorf("set pending limits: %w", err)
	}
	// The interest must be registered before the first publish, which
	// comes on another connection.
	if err := subConn.FlushTimeout(waitTimeout); err != nil {
		return latencyResult{}, fmt.Errorf("subscriber flush: %w", err)
	}

	pubConn, err := connect(cfg.url, "ref-lat-pub")
	if err != nil {
		return latencyResult{}, fmt.Errorf("connect publisher: %w", err)
	}
	defer pubConn.Close()

	data := payload(cfg.size)
	p := newPacer(cfg.rate)
	var sent int64
	var firstSend, lastSend time.Time
	start := time.Now()
	rec.warmupEnd.Store(start.Add(cfg.warmup).UnixNano())
	for time.Since(start) < cfg.duration {
		now := time.Now()
		putSendTime(data, now.UnixNano())
		if err := pubConn.Publish(cfg.subject, data); err != nil {
			return latencyResult{}, fmt.Errorf("publish %d: %w", sent, err)
		}
		if sent == 0 {
			firstSend = now
		}
		lastSend = now
		sent++
		time.Sleep(p.next(sent, time.Since(start)))
	}
	if err := pubConn.FlushTimeout(waitTimeout); err != nil {
		return latencyResult{}, fmt.Errorf("flush: %w", err)
	}

	// Wait for the messages still in flight, at most drainTimeout.
	deadline := time.Now().Add(drainTimeout)
	for rec.received.Load() < sent && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Stop deliveries before reading the histogram.
	if err := sub.Unsubscribe(); err != nil {
		return latencyResult{}, fmt.Errorf("unsubscribe: %w", err)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	received := rec.received.Load()
	if received < sent {
		fmt.Fprintf(os.Stderr, "ref latency: %d of %d messages did not arrive within %v\n", sent-received, sent, drainTimeout)
	}
	if rec.outOfRange > 0 {
		fmt.Fprintf(os.Stderr, "ref latency: %d latencies outside 0 .. 1 h not recorded\n", rec.outOfRange)
	}
	if rec.unstamped > 0 {
		fmt.Fprintf(os.Stderr, "ref latency: %d messages without a send time\n", rec.unstamped)
	}
	if rec.hist.TotalCount() == 0 {
		return latencyResult{}, errors.New("no latency recorded (no message sent after the warm-up arrived)")
	}
	actual := 0.0
	if span := lastSend.Sub(firstSend); sent > 1 && span > 0 {
		actual = float64(sent-1) / span.Seconds()
	}
	h := rec.hist
	return latencyResult{
		Mode:       "latency",
		Count:      h.TotalCount(),
		P50:        h.ValueAtQuantile(50),
		P90:        h.ValueAtQuantile(90),
		P99:        h.ValueAtQuantile(99),
		P999:       h.ValueAtQuantile(99.9),
		Max:        h.Max(),
		ActualRate: actual,
		Sent:       sent,
		Lost:       max(0, sent-received),
	}, nil
}
