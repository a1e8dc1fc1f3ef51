package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// The jspub subcommand publishes into a JetStream stream with nats.go's
// jetstream package, the way an application does, so that msgbench's
// `js pub` has something to be compared with:
//
//   - sync: js.Publish, each call waiting for its PubAck;
//   - async: js.PublishAsync with at most -max-in-flight unacknowledged
//     (jetstream.WithPublishAsyncMaxPending), then PublishAsyncComplete;
//   - batch: ADR-50 atomic batches of -batch messages, one batch at a time
//     (see publishBatch): the members are plain core publishes with the
//     Nats-Batch-Id and Nats-Batch-Sequence headers, the last one also
//     carries Nats-Batch-Commit and is sent as a request whose reply is the
//     batch's PubAck. The pinned nats.go has no batch publisher, so this is
//     what an application writes with it.
//   - fast: one fast batch (JetStream API level 4) for the whole run, with
//     orbit.go's jetstreamext.FastPublisher: -batch is its flow (an
//     acknowledgement every that many messages, at most 500) and
//     -max-outstanding-acks its MaxOutstandingAcks; Add for every message,
//     then Close, whose PubAck counts the messages the batch stored. This
//     is what `nats bench js pub fast` does.
//
// -persist async creates the stream with the async persist mode (file
// storage only), as msgbench's --persist async does.
//
// The stream is set up exactly as msgbench sets up its own (see
// jsStreamConfig), so both tools can share one stream; in batch mode it
// also allows atomic publishing, as msgbench's does in its batch mode.

type jsPubConfig struct {
	config
	publish     string // "sync", "async", "batch" or "fast"
	maxInFlight int
	batch       int // messages per atomic batch, or the flow in fast mode
	outstanding int // fast mode: flow acknowledgements waited for at most
	stream      string
	storage     string // "memory" or "file"
	persist     string // "default" or "async"
}

// maxFastFlow is the largest flow the server honours in a fast batch
// (msgbench's --batch in fast mode has the same bound).
const maxFastFlow = 500

// batchCommitTimeout bounds the wait for a batch's PubAck: the JetStream
// context's default timeout, which a sync publish waits too.
const batchCommitTimeout = 5 * time.Second

// maxAtomicBatch is the largest atomic batch the server accepts by default
// (msgbench's --batch has the same bound).
const maxAtomicBatch = 1000

// The ADR-50 headers of an atomic batch.
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
)

type jsPubResult struct {
	Mode        string `json:"mode"`
	Publish     string `json:"publish"`
	MaxInFlight int    `json:"max_in_flight,omitempty"`
	// Batch is the messages per atomic batch and Batches the batches
	// committed, in batch mode only.
	Batch   int   `json:"batch,omitempty"`
	Batches int64 `json:"batches,omitempty"`
	// MaxOutstandingAcks is the fast publisher's, in fast mode only.
	MaxOutstandingAcks int `json:"max_outstanding_acks,omitempty"`
	// Persist is the stream's persist mode as the server reports it.
	Persist string `json:"persist"`
	Msgs    int    `json:"msgs"`
	// Acked counts publishes that got a PubAck, Failed those that got an
	// error (or no answer before the final wait gave up) instead.
	Acked   int64   `json:"acked"`
	Failed  int64   `json:"failed"`
	Seconds float64 `json:"seconds"`
	// MsgsPerSec is Acked / Seconds: acknowledged publishes per second,
	// the figure msgbench puts first.
	MsgsPerSec float64 `json:"msgs_per_sec"`
	// StreamMsgs is the stream's message count after the run; since the
	// stream is purged first, it should equal Acked.
	StreamMsgs uint64 `json:"stream_msgs"`
}

func parseJSPubFlags(args []string) (jsPubConfig, error) {
	cfg, err := parseJSPubArgs(args)
	if err != nil {
		return jsPubConfig{}, usageError{err}
	}
	return cfg, nil
}

func parseJSPubArgs(args []string) (jsPubConfig, error) {
	var cfg jsPubConfig
	fs := flag.NewFlagSet("jspub", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	// Defaults as msgbench's js pub, except the names.
	fs.StringVar(&cfg.url, "url", "nats://127.0.0.1:4222", "server URL")
	fs.IntVar(&cfg.msgs, "msgs", 100000, "number of messages to publish")
	fs.IntVar(&cfg.size, "size", 128, "payload size in bytes")
	fs.StringVar(&cfg.subject, "subject", "benchjs.x", "subject to publish to; the stream captures it")
	fs.StringVar(&cfg.stream, "stream", "benchjs", "stream name; created or updated, then purged")
	fs.StringVar(&cfg.publish, "mode", "async", "sync: wait for each PubAck; async: keep up to -max-in-flight unacknowledged; batch: atomic batches of -batch messages, one at a time")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", 256, "unacknowledged publishes at most, in async mode")
	fs.IntVar(&cfg.batch, "batch", 100, "messages per atomic batch, in batch mode (1 to 1000); in fast mode, the flow (1 to 500)")
	fs.IntVar(&cfg.outstanding, "max-outstanding-acks", 2, "flow acknowledgements waited for at most, in fast mode")
	fs.StringVar(&cfg.storage, "storage", "memory", "stream storage: memory or file")
	fs.StringVar(&cfg.persist, "persist", "default", "stream persist mode: default or async (file storage only)")
	if err := fs.Parse(args); err != nil {
		return jsPubConfig{}, err
	}
	if fs.NArg() != 0 {
		return jsPubConfig{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if cfg.msgs <= 0 {
		return jsPubConfig{}, errors.New("-msgs must be > 0")
	}
	if cfg.size < 0 {
		return jsPubConfig{}, errors.New("-size must be >= 0")
	}
	if cfg.publish != "sync" && cfg.publish != "async" && cfg.publish != "batch" && cfg.publish != "fast" {
		return jsPubConfig{}, fmt.Errorf("-mode must be sync, async, batch or fast, not %q", cfg.publish)
	}
	if cfg.batch < 1 || cfg.batch > maxAtomicBatch {
		return jsPubConfig{}, fmt.Errorf("-batch must be 1 to %d", maxAtomicBatch)
	}
	if cfg.publish == "fast" && cfg.batch > maxFastFlow {
		return jsPubConfig{}, fmt.Errorf("-batch must be 1 to %d in fast mode", maxFastFlow)
	}
	if cfg.outstanding < 1 || cfg.outstanding > 65535 {
		return jsPubConfig{}, errors.New("-max-outstanding-acks must be 1 to 65535")
	}
	if cfg.storage != "memory" && cfg.storage != "file" {
		return jsPubConfig{}, fmt.Errorf("-storage must be memory or file, not %q", cfg.storage)
	}
	if cfg.persist != "default" && cfg.persist != "async" {
		return jsPubConfig{}, fmt.Errorf("-persist must be default or async, not %q", cfg.persist)
	}
	if cfg.persist == "async" && (cfg.storage != "file" || cfg.publish == "batch") {
		return jsPubConfig{}, errors.New("-persist async needs -storage file and cannot be used with -mode batch")
	}
	if cfg.maxInFlight < 1 {
		return jsPubConfig{}, errors.New("-max-in-flight must be >= 1")
	}
	if err := checkSubject(cfg.subject); err != nil {
		return jsPubConfig{}, err
	}
	// The server refuses these in a stream name; saying so here gives a
	// usage error instead of a failed run.
	if cfg.stream == "" || strings.ContainsAny(cfg.stream, ".*> \t\r\n/\\") {
		return jsPubConfig{}, fmt.Errorf("invalid stream name %q", cfg.stream)
	}
	return cfg, nil
}

// jsStreamConfig is the stream msgbench's js pub creates with its default
// flags (--storage memory --replicas 1, no --max-bytes, --discard old):
// one subject, memory storage, one replica, no limits, discard old. The
// server fills in the same defaults for everything else, so this config
// and msgbench's are the same stream; msgbench's create fails on a stream
// of the same name with any other config. For batch mode, see
// jsBatchStreamConfig.
func jsStreamConfig(name, subject string) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:     name,
		Subjects: []string{subject},
		Storage:  jetstream.MemoryStorage,
		Replicas: 1,
		MaxBytes: -1,
		Discard:  jetstream.DiscardOld,
	}
}

// jsBatchStreamConfig is the stream msgbench's js pub creates in batch
// mode: jsStreamConfig's, also accepting atomic batches (allow_atomic).
func jsBatchStreamConfig(name, subject string) jetstream.StreamConfig {
	c := jsStreamConfig(name, subject)
	c.AllowAtomicPublish = true
	return c
}

// jsPubStreamConfig is the stream msgbench's js pub creates for the same
// mode, storage and persist mode.
func jsPubStreamConfig(cfg jsPubConfig) jetstream.StreamConfig {
	c := jsStreamConfig(cfg.stream, cfg.subject)
	switch cfg.publish {
	case "batch":
		c = jsBatchStreamConfig(cfg.stream, cfg.subject)
	case "fast":
		c.AllowBatchPublish = true
	}
	if cfg.storage == "file" {
		c.Storage = jetstream.FileStorage
	}
	if cfg.persist == "async" {
		c.PersistMode = jetstream.AsyncPersistMode
	}
	return c
}

// publishFast sends every message in one fast batch and closes it; it
// returns the messages the server stored, from the closing PubAck.
func publishFast(js jetstream.JetStream, cfg jsPubConfig, data []byte) (int64, error) {
	fp, err := jetstreamext.NewFastPublisher(js, jetstreamext.FastPublishFlowControl{
		Flow:               uint16(cfg.batch),
		MaxOutstandingAcks: uint16(cfg.outstanding),
		AckTimeout:         batchCommitTimeout,
	})
	if err != nil {
		return 0, err
	}
	for i := 0; i < cfg.msgs; i++ {
		if _, err := fp.Add(cfg.subject, data); err != nil {
			return 0, fmt.Errorf("fast batch message %d: %w", i+1, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchCommitTimeout)
	defer cancel()
	ack, err := fp.Close(ctx)
	if err != nil {
		return 0, fmt.Errorf("fast batch close: %w", err)
	}
	return int64(ack.BatchSize), nil
}

// batchPubAck is the reply to a batch's commit: a PubAck that also names
// the batch and counts its messages, or an error. The pinned nats.go's
// jetstream.PubAck has no batch fields, hence this type.
type batchPubAck struct {
	Stream   string              `json:"stream"`
	Sequence uint64              `json:"seq"`
	BatchID  string              `json:"batch"`
	Count    int                 `json:"count"`
	Error    *jetstream.APIError `json:"error,omitempty"`
}

// batchIDs hands out batch ids unique to this run: a random prefix and a
// counter (the server allows 64 characters).
type batchIDs struct {
	prefix string
	next   uint64
}

func newBatchIDs() (*batchIDs, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &batchIDs{prefix: "ref" + hex.EncodeToString(b[:]) + "-"}, nil
}

func (g *batchIDs) id() string {
	g.next++
	return g.prefix + strconv.FormatUint(g.next, 10)
}

// publishBatch sends one atomic batch of n messages: n-1 core publishes,
// then the commit as a request, and returns the number of messages the
// server acknowledged (the PubAck's count). An error means the batch was
// not acknowledged; the caller tells a dead connection from a refused or
// timed-out batch by nc.IsClosed.
func publishBatch(nc *nats.Conn, subject, id string, n int, data []byte, timeout time.Duration) (int, error) {
	for i := 1; i <= n; i++ {
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		msg.Header.Set(hdrBatchID, id)
		msg.Header.Set(hdrBatchSeq, strconv.Itoa(i))
		if i < n {
			if err := nc.PublishMsg(msg); err != nil {
				return 0, fmt.Errorf("batch %s message %d: %w", id, i, err)
			}
			continue
		}
		msg.Header.Set(hdrBatchCommit, "1")
		reply, err := nc.RequestMsg(msg, timeout)
		if err != nil {
			return 0, fmt.Errorf("batch %s commit: %w", id, err)
		}
		var ack batchPubAck
		if err := json.Unmarshal(reply.Data, &ack); err != nil {
			return 0, fmt.Errorf("batch %s commit: reply is not a PubAck (%w): %q", id, err, reply.Data)
		}
		if ack.Error != nil {
			return 0, fmt.Errorf("batch %s refused: %s (err_code %d)", id, ack.Error.Description, ack.Error.ErrorCode)
		}
		if ack.BatchID != id || ack.Count != n {
			return ack.Count, fmt.Errorf("batch %s: PubAck for batch %q with count %d, want %d", id, ack.BatchID, ack.Count, n)
		}
		return ack.Count, nil
	}
	return 0, nil
}

// publishAsync sends one message, waiting while the window is full.
// PublishAsync gives up (without sending) after 200 ms with a full window;
// on a busy two-core machine that can be a scheduling hiccup rather than a
// dead server, so it is tried again until the window has been full for
// waitTimeout.
func publishAsync(js jetstream.JetStream, subject string, data []byte) error {
	var stalledSince time.Time
	for {
		_, err := js.PublishAsync(subject, data)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return err
		}
		if stalledSince.IsZero() {
			stalledSince = time.Now()
		} else if time.Since(stalledSince) >= waitTimeout {
			return err
		}
	}
}

func runJSPub(cfg jsPubConfig) (jsPubResult, error) {
	nc, err := connect(cfg.url, "ref-jspub")
	if err != nil {
		return jsPubResult{}, fmt.Errorf("connect: %w", err)
	}
	defer nc.Close()

	// Async acks and errors arrive on the client's reply goroutine; the
	// counts are read after PublishAsyncComplete.
	var acked, failed atomic.Int64
	var firstErr sync.Once
	noteErr := func(err error) {
		firstErr.Do(func() { fmt.Fprintf(os.Stderr, "ref jspub: first failed publish: %v\n", err) })
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(cfg.maxInFlight),
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) {
			acked.Add(1)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			failed.Add(1)
			noteErr(err)
		}),
	)
	if err != nil {
		return jsPubResult{}, fmt.Errorf("jetstream: %w", err)
	}

	setupCtx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	streamCfg := jsPubStreamConfig(cfg)
	stream, err := js.CreateOrUpdateStream(setupCtx, streamCfg)
	if err != nil {
		return jsPubResult{}, fmt.Errorf("create or update stream %s: %w", cfg.stream, err)
	}
	if err := stream.Purge(setupCtx); err != nil {
		return jsPubResult{}, fmt.Errorf("purge stream %s: %w", cfg.stream, err)
	}

	var ids *batchIDs
	if cfg.publish == "batch" {
		if ids, err = newBatchIDs(); err != nil {
			return jsPubResult{}, fmt.Errorf("batch ids: %w", err)
		}
	}
	var batches int64

	data := payload(cfg.size)
	start := time.Now()
	switch cfg.publish {
	case "fast":
		got, err := publishFast(js, cfg, data)
		if err != nil {
			return jsPubResult{}, fmt.Errorf("publish: %w", err)
		}
		acked.Add(got)
		failed.Add(int64(cfg.msgs) - got)
	case "batch":
		// One batch at a time; the last one may be short. Each commit
		// waits as long as a sync publish does (the JetStream context's
		// default timeout, 5 s).
		for sent := 0; sent < cfg.msgs; {
			n := min(cfg.batch, cfg.msgs-sent)
			got, err := publishBatch(nc, cfg.subject, ids.id(), n, data, batchCommitTimeout)
			sent += n
			acked.Add(int64(got))
			if err != nil {
				if nc.IsClosed() {
					return jsPubResult{}, fmt.Errorf("publish: %w", err)
				}
				failed.Add(int64(max(n-got, 0)))
				noteErr(err)
				continue
			}
			batches++
		}
	case "sync":
		// No deadline on the context: each publish then gets the
		// JetStream context's default timeout (5 s), like msgbench's
		// default --timeout for an acknowledgement.
		ctx := context.Background()
		for i := 0; i < cfg.msgs; i++ {
			if _, err := js.Publish(ctx, cfg.subject, data); err != nil {
				if nc.IsClosed() {
					return jsPubResult{}, fmt.Errorf("publish %d: %w", i, err)
				}
				failed.Add(1)
				noteErr(err)
				continue
			}
			acked.Add(1)
		}
	default:
		for i := 0; i < cfg.msgs; i++ {
			if err := publishAsync(js, cfg.subject, data); err != nil {
				return jsPubResult{}, fmt.Errorf("publish %d: %w", i, err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(waitTimeout):
			pending := js.PublishAsyncPending()
			fmt.Fprintf(os.Stderr, "ref jspub: %d publishes still unacknowledged after %v\n", pending, waitTimeout)
			failed.Add(int64(pending))
		}
	}
	elapsed := time.Since(start)

	infoCtx, cancelInfo := context.WithTimeout(context.Background(), waitTimeout)
	defer cancelInfo()
	info, err := stream.Info(infoCtx)
	if err != nil {
		return jsPubResult{}, fmt.Errorf("stream info %s: %w", cfg.stream, err)
	}
	n := acked.Load()
	res := jsPubResult{
		Mode:       "jspub",
		Publish:    cfg.publish,
		Msgs:       cfg.msgs,
		Acked:      n,
		Failed:     failed.Load(),
		Seconds:    elapsed.Seconds(),
		MsgsPerSec: rate(int(n), elapsed),
		StreamMsgs: info.State.Msgs,
	}
	switch cfg.publish {
	case "async":
		res.MaxInFlight = cfg.maxInFlight
	case "batch":
		res.Batch = cfg.batch
		res.Batches = batches
	case "fast":
		res.Batch = cfg.batch
		res.MaxOutstandingAcks = cfg.outstanding
	}
	res.Persist = "default"
	if info.Config.PersistMode == jetstream.AsyncPersistMode {
		res.Persist = "async"
	}
	if res.StreamMsgs != uint64(res.Acked) {
		fmt.Fprintf(os.Stderr, "ref jspub: the stream holds %d messages, but %d publishes were acknowledged\n", res.StreamMsgs, res.Acked)
	}
	return res, nil
}
