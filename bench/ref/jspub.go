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

// The jspub subcommand publishes into a JetStream stream with nats.go's
// jetstream package, the way an application does, so that msgbench's
// `js pub` has something to be compared with:
//
//   - sync: js.Publish, each call waiting for its PubAck;
//   - async: js.PublishAsync with at most -max-in-flight unacknowledged
//     (jetstream.WithPublishAsyncMaxPending), then PublishAsyncComplete.
//
// The stream is set up exactly as msgbench sets up its own (see
// jsStreamConfig), so both tools can share one stream.

type jsPubConfig struct {
	config
	publish     string // "sync" or "async"
	maxInFlight int
	stream      string
}

type jsPubResult struct {
	Mode        string `json:"mode"`
	Publish     string `json:"publish"`
	MaxInFlight int    `json:"max_in_flight,omitempty"`
	Msgs        int    `json:"msgs"`
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
	fs.StringVar(&cfg.publish, "mode", "async", "sync: wait for each PubAck; async: keep up to -max-in-flight unacknowledged")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", 256, "unacknowledged publishes at most, in async mode")
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
	if cfg.publish != "sync" && cfg.publish != "async" {
		return jsPubConfig{}, fmt.Errorf("-mode must be sync or async, not %q", cfg.publish)
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
// of the same name with any other config.
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
	stream, err := js.CreateOrUpdateStream(setupCtx, jsStreamConfig(cfg.stream, cfg.subject))
	if err != nil {
		return jsPubResult{}, fmt.Errorf("create or update stream %s: %w", cfg.stream, err)
	}
	if err := stream.Purge(setupCtx); err != nil {
		return jsPubResult{}, fmt.Errorf("purge stream %s: %w", cfg.stream, err)
	}

	data := payload(cfg.size)
	start := time.Now()
	if cfg.publish == "sync" {
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
	} else {
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
	if cfg.publish == "async" {
		res.MaxInFlight = cfg.maxInFlight
	}
	if res.StreamMsgs != uint64(res.Acked) {
		fmt.Fprintf(os.Stderr, "ref jspub: the stream holds %d messages, but %d publishes were acknowledged\n", res.StreamMsgs, res.Acked)
	}
	return res, nil
}
