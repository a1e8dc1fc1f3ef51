package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The jsconsume subcommand consumes from a JetStream stream with nats.go's
// jetstream package, the way an application does, so that msgbench's
// `js consume --publish before` has something to be compared with.
//
// It first fills the stream (created or updated as jspub's sync and async
// modes set it up, then purged) with -msgs messages, published
// asynchronously with 256 in flight; that part is not timed. Then it
// consumes them from the first new stream sequence on:
//
//   - fetch: a pull consumer, consumer.Fetch of -batch messages at a time,
//     each fetch waited for before the next is sent;
//   - consume: a pull consumer, consumer.Consume with
//     jetstream.PullMaxMessages(-batch) (nats.go pulls -batch ahead and
//     tops up as the buffer drains);
//   - ordered: stream.OrderedConsumer, then Consume like consume mode
//     (an ordered consumer never acks).
//
// With -ack explicit every message is acknowledged with msg.Ack() (the
// consumer has AckExplicit); with -ack none the consumer has AckNone.
//
// The pull consumer is configured like msgbench's: deliver by start
// sequence, at most max(4 × -batch, 1000) unacknowledged with explicit
// acks, 512 waiting pulls, a 60 s inactivity threshold. It is deleted
// afterwards (the ordered consumer too).
//
// The time runs from just before consuming starts (the first Fetch, or
// the Consume call, which for an ordered consumer also creates it on the
// server) to the message that completed the set. Every delivery's stream
// sequence (msg.Metadata) is checked against the range the fill stored:
// each must be seen exactly once. Consuming stops when all -msgs
// sequences have been seen, or when no message arrived for -timeout.

type jsConsumeConfig struct {
	config
	stream  string
	mode    string // "fetch", "consume" or "ordered"
	batch   int
	ack     string // "explicit" or "none"
	timeout time.Duration
}

// fillWindow is how many fill publishes are unacknowledged at most, as in
// msgbench's fill.
const fillWindow = 256

type jsConsumeResult struct {
	Mode    string `json:"mode"`
	Consume string `json:"consume"`
	Ack     string `json:"ack"`
	Batch   int    `json:"batch"`
	Msgs    int    `json:"msgs"`
	// Received counts deliveries, Distinct the stream sequences among
	// them that the fill stored; Duplicates are deliveries of a sequence
	// seen before, Unexpected those of a sequence outside the fill, and
	// Missing the fill's sequences never delivered.
	Received   int64 `json:"received"`
	Distinct   int64 `json:"distinct"`
	Duplicates int64 `json:"duplicates"`
	Unexpected int64 `json:"unexpected"`
	Missing    int64 `json:"missing"`
	// Reconciled: every filled message delivered exactly once, nothing else.
	Reconciled bool    `json:"reconciled"`
	AckErrors  int64   `json:"ack_errors"`
	Seconds    float64 `json:"seconds"`
	// MsgsPerSec is Received / Seconds: the consumption rate alone.
	MsgsPerSec float64 `json:"msgs_per_sec"`
	// The fill, for context: its time and acknowledged publishes per second.
	FillSeconds    float64 `json:"fill_seconds"`
	FillMsgsPerSec float64 `json:"fill_msgs_per_sec"`
}

func parseJSConsumeFlags(args []string) (jsConsumeConfig, error) {
	cfg, err := parseJSConsumeArgs(args)
	if err != nil {
		return jsConsumeConfig{}, usageError{err}
	}
	return cfg, nil
}

func parseJSConsumeArgs(args []string) (jsConsumeConfig, error) {
	var cfg jsConsumeConfig
	fs := flag.NewFlagSet("jsconsume", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	// Defaults as msgbench's js consume, except the names.
	fs.StringVar(&cfg.url, "url", "nats://127.0.0.1:4222", "server URL")
	fs.IntVar(&cfg.msgs, "msgs", 100000, "number of messages to fill the stream with, then consume")
	fs.IntVar(&cfg.size, "size", 128, "payload size in bytes")
	fs.StringVar(&cfg.subject, "subject", "benchjs.x", "subject to publish to; the stream captures it")
	fs.StringVar(&cfg.stream, "stream", "benchjs", "stream name; created or updated, then purged")
	fs.StringVar(&cfg.mode, "mode", "consume", "fetch: Fetch -batch at a time; consume: Consume with -batch pulled ahead; ordered: an ordered consumer's Consume")
	fs.IntVar(&cfg.batch, "batch", 500, "messages per Fetch, or pulled ahead by Consume")
	fs.StringVar(&cfg.ack, "ack", "", "explicit: Ack each message; none: an AckNone consumer (default: explicit, none for ordered)")
	fs.DurationVar(&cfg.timeout, "timeout", waitTimeout, "give up when no message arrives for this long")
	if err := fs.Parse(args); err != nil {
		return jsConsumeConfig{}, err
	}
	if fs.NArg() != 0 {
		return jsConsumeConfig{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if cfg.msgs <= 0 {
		return jsConsumeConfig{}, errors.New("-msgs must be > 0")
	}
	if cfg.size < 0 {
		return jsConsumeConfig{}, errors.New("-size must be >= 0")
	}
	switch cfg.mode {
	case "fetch", "consume", "ordered":
	default:
		return jsConsumeConfig{}, fmt.Errorf("-mode must be fetch, consume or ordered, not %q", cfg.mode)
	}
	if cfg.batch < 1 {
		return jsConsumeConfig{}, errors.New("-batch must be >= 1")
	}
	switch {
	case cfg.ack == "" && cfg.mode == "ordered":
		cfg.ack = "none"
	case cfg.ack == "":
		cfg.ack = "explicit"
	case cfg.ack != "explicit" && cfg.ack != "none":
		return jsConsumeConfig{}, fmt.Errorf("-ack must be explicit or none, not %q", cfg.ack)
	case cfg.ack == "explicit" && cfg.mode == "ordered":
		return jsConsumeConfig{}, errors.New("-ack explicit: an ordered consumer does not ack")
	}
	if cfg.timeout <= 0 {
		return jsConsumeConfig{}, errors.New("-timeout must be > 0")
	}
	if err := checkSubject(cfg.subject); err != nil {
		return jsConsumeConfig{}, err
	}
	if cfg.stream == "" || strings.ContainsAny(cfg.stream, ".*> \t\r\n/\\") {
		return jsConsumeConfig{}, fmt.Errorf("invalid stream name %q", cfg.stream)
	}
	return cfg, nil
}

// jsConsumerConfig is the pull consumer of fetch and consume modes, as
// msgbench's js consume configures its own.
func jsConsumerConfig(start uint64, batch int, ack string) jetstream.ConsumerConfig {
	c := jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		AckPolicy:         jetstream.AckNonePolicy,
		MaxWaiting:        512,
		InactiveThreshold: 60 * time.Second,
	}
	if ack == "explicit" {
		c.AckPolicy = jetstream.AckExplicitPolicy
		// Enough for the pulls in flight plus acks on their way.
		c.MaxAckPending = max(4*batch, 1000)
	}
	return c
}

// seqTracker checks that the stream sequences start .. start+n-1 are each
// delivered exactly once. It is safe for concurrent use (an ordered
// consumer's handler may run on a new goroutine after a reset).
type seqTracker struct {
	mu         sync.Mutex
	start      uint64
	seen       []bool
	received   int64
	distinct   int64
	duplicates int64
	unexpected int64
	// lastAt is the time of the latest recorded delivery, as an offset
	// from base; see record.
	base   time.Time
	lastAt time.Duration
	// progress mirrors received, for a watcher that must not take mu.
	progress atomic.Int64
}

func newSeqTracker(start uint64, n int) *seqTracker {
	return &seqTracker{start: start, seen: make([]bool, n), base: time.Now()}
}

// record notes one delivery and reports whether every expected sequence
// has now been seen.
func (t *seqTracker) record(seq uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.received++
	t.progress.Store(t.received)
	switch {
	case seq < t.start || seq-t.start >= uint64(len(t.seen)):
		t.unexpected++
	case t.seen[seq-t.start]:
		t.duplicates++
	default:
		t.seen[seq-t.start] = true
		t.distinct++
	}
	done := t.distinct == int64(len(t.seen))
	// Reading the clock for every message would add measurable cost;
	// every 256th delivery is precise enough for a run that stalls, and
	// the one that completes the set is exact.
	if done || t.received&255 == 0 {
		t.lastAt = time.Since(t.base)
	}
	return done
}

// remaining is how many expected sequences have not been seen yet.
func (t *seqTracker) remaining() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen) - int(t.distinct)
}

// fill publishes cfg.msgs messages asynchronously with fillWindow in flight
// and returns the time it took; every one must be acknowledged.
func fill(nc *nats.Conn, cfg jsConsumeConfig) (time.Duration, error) {
	var acked, failed atomic.Int64
	var firstErr sync.Once
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(fillWindow),
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) {
			acked.Add(1)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			failed.Add(1)
			firstErr.Do(func() { fmt.Fprintf(os.Stderr, "ref jsconsume: first failed fill publish: %v\n", err) })
		}),
	)
	if err != nil {
		return 0, fmt.Errorf("jetstream: %w", err)
	}
	data := payload(cfg.size)
	start := time.Now()
	for i := 0; i < cfg.msgs; i++ {
		if err := publishAsync(js, cfg.subject, data); err != nil {
			return 0, fmt.Errorf("fill publish %d: %w", i, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(waitTimeout):
		return 0, fmt.Errorf("fill: %d publishes still unacknowledged after %v", js.PublishAsyncPending(), waitTimeout)
	}
	d := time.Since(start)
	if n := acked.Load(); n != int64(cfg.msgs) {
		return 0, fmt.Errorf("fill: %d of %d publishes acknowledged, %d failed", n, cfg.msgs, failed.Load())
	}
	return d, nil
}

func runJSConsume(cfg jsConsumeConfig) (jsConsumeResult, error) {
	nc, err := connect(cfg.url, "ref-jsconsume")
	if err != nil {
		return jsConsumeResult{}, fmt.Errorf("connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return jsConsumeResult{}, fmt.Errorf("jetstream: %w", err)
	}

	setupCtx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	stream, err := js.CreateOrUpdateStream(setupCtx, jsStreamConfig(cfg.stream, cfg.subject))
	if err != nil {
		return jsConsumeResult{}, fmt.Errorf("create or update stream %s: %w", cfg.stream, err)
	}
	if err := stream.Purge(setupCtx); err != nil {
		return jsConsumeResult{}, fmt.Errorf("purge stream %s: %w", cfg.stream, err)
	}
	info, err := stream.Info(setupCtx)
	if err != nil {
		return jsConsumeResult{}, fmt.Errorf("stream info %s: %w", cfg.stream, err)
	}
	// The fill's messages get the sequences from here on.
	first := info.State.LastSeq + 1

	fillDur, err := fill(nc, cfg)
	if err != nil {
		return jsConsumeResult{}, err
	}

	tr := newSeqTracker(first, cfg.msgs)
	var ackErrors atomic.Int64
	var firstAckErr, firstMetaErr, firstConsumeErr sync.Once
	done := make(chan struct{})
	var doneOnce sync.Once
	handle := func(msg jetstream.Msg) {
		meta, err := msg.Metadata()
		if err != nil {
			firstMetaErr.Do(func() { fmt.Fprintf(os.Stderr, "ref jsconsume: a message without JetStream metadata: %v\n", err) })
			return
		}
		if cfg.ack == "explicit" {
			if err := msg.Ack(); err != nil {
				ackErrors.Add(1)
				firstAckErr.Do(func() { fmt.Fprintf(os.Stderr, "ref jsconsume: first failed ack: %v\n", err) })
			}
		}
		if tr.record(meta.Sequence.Stream) {
			doneOnce.Do(func() { close(done) })
		}
	}
	consumeErr := jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		firstConsumeErr.Do(func() { fmt.Fprintf(os.Stderr, "ref jsconsume: first consume error: %v\n", err) })
	})

	// The consumer's name, to delete it afterwards.
	var consumerName string
	var start time.Time
	switch cfg.mode {
	case "fetch", "consume":
		cons, err := stream.CreateConsumer(setupCtx, jsConsumerConfig(first, cfg.batch, cfg.ack))
		if err != nil {
			return jsConsumeResult{}, fmt.Errorf("create consumer: %w", err)
		}
		consumerName = cons.CachedInfo().Name
		if cfg.mode == "fetch" {
			start = time.Now()
			err = fetchAll(cons, tr, handle, cfg)
		} else {
			start = time.Now()
			err = consumeAll(cons, tr, done, handle, consumeErr, cfg)
		}
		if err != nil {
			return jsConsumeResult{}, err
		}
	case "ordered":
		oc, err := stream.OrderedConsumer(setupCtx, jetstream.OrderedConsumerConfig{
			DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:       first,
			InactiveThreshold: 60 * time.Second,
		})
		if err != nil {
			return jsConsumeResult{}, fmt.Errorf("ordered consumer: %w", err)
		}
		start = time.Now()
		err = consumeAll(oc, tr, done, handle, consumeErr, cfg)
		if ci := oc.CachedInfo(); ci != nil {
			consumerName = ci.Name
		}
		if err != nil {
			return jsConsumeResult{}, err
		}
	}

	if consumerName != "" {
		delCtx, cancelDel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancelDel()
		if err := stream.DeleteConsumer(delCtx, consumerName); err != nil {
			fmt.Fprintf(os.Stderr, "ref jsconsume: delete consumer %s: %v\n", consumerName, err)
		}
	}

	tr.mu.Lock()
	defer tr.mu.Unlock()
	elapsed := tr.base.Add(tr.lastAt).Sub(start)
	if tr.received == 0 || elapsed < 0 {
		elapsed = 0
	}
	res := jsConsumeResult{
		Mode:           "jsconsume",
		Consume:        cfg.mode,
		Ack:            cfg.ack,
		Batch:          cfg.batch,
		Msgs:           cfg.msgs,
		Received:       tr.received,
		Distinct:       tr.distinct,
		Duplicates:     tr.duplicates,
		Unexpected:     tr.unexpected,
		Missing:        int64(len(tr.seen)) - tr.distinct,
		AckErrors:      ackErrors.Load(),
		Seconds:        elapsed.Seconds(),
		MsgsPerSec:     rate(int(tr.received), elapsed),
		FillSeconds:    fillDur.Seconds(),
		FillMsgsPerSec: rate(cfg.msgs, fillDur),
	}
	res.Reconciled = res.Missing == 0 && res.Duplicates == 0 && res.Unexpected == 0
	if !res.Reconciled {
		fmt.Fprintf(os.Stderr, "ref jsconsume: %d of %d messages delivered, %d duplicates, %d unexpected\n",
			res.Distinct, res.Msgs, res.Duplicates, res.Unexpected)
	}
	return res, nil
}

// fetchAll fetches until every expected message has been seen, a batch at
// a time (the last one asks only for what is left, so it does not wait
// for its expiry), or until a fetch brought nothing in cfg.timeout.
func fetchAll(cons jetstream.Consumer, tr *seqTracker, handle func(jetstream.Msg), cfg jsConsumeConfig) error {
	for {
		left := tr.remaining()
		if left == 0 {
			return nil
		}
		batch, err := cons.Fetch(min(cfg.batch, left), jetstream.FetchMaxWait(cfg.timeout))
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		got := 0
		for msg := range batch.Messages() {
			handle(msg)
			got++
		}
		if err := batch.Error(); err != nil && got == 0 {
			fmt.Fprintf(os.Stderr, "ref jsconsume: fetch: %v\n", err)
		}
		if got == 0 {
			fmt.Fprintf(os.Stderr, "ref jsconsume: no message for %v, %d still missing\n", cfg.timeout, tr.remaining())
			return nil
		}
	}
}

// consumeAll runs Consume until every expected message has been seen or no
// message arrived for cfg.timeout, then stops it.
func consumeAll(cons jetstream.Consumer, tr *seqTracker, done <-chan struct{}, handle func(jetstream.Msg), onErr jetstream.ConsumeErrHandler, cfg jsConsumeConfig) error {
	cc, err := cons.Consume(handle, jetstream.PullMaxMessages(cfg.batch), onErr)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastCount := tr.progress.Load()
	lastProgress := time.Now()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			n := tr.progress.Load()
			if n != lastCount {
				lastCount, lastProgress = n, time.Now()
			} else if time.Since(lastProgress) >= cfg.timeout {
				fmt.Fprintf(os.Stderr, "ref jsconsume: no message for %v, %d still missing\n", cfg.timeout, tr.remaining())
				break wait
			}
		}
	}
	cc.Stop()
	select {
	case <-cc.Closed():
	case <-time.After(waitTimeout):
	}
	return nil
}
