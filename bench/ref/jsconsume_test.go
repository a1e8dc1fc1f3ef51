package main

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestParseJSConsumeArgs(t *testing.T) {
	cfg, err := parseJSConsumeArgs([]string{"-mode", "fetch", "-msgs", "2000", "-stream", "S", "-subject", "S.x"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.mode != "fetch" || cfg.msgs != 2000 || cfg.size != 128 || cfg.batch != 500 || cfg.ack != "explicit" ||
		cfg.timeout != waitTimeout || cfg.stream != "S" || cfg.subject != "S.x" {
		t.Errorf("parsed %+v", cfg)
	}
	// Ordered consumers do not ack, so that is their default.
	cfg, err = parseJSConsumeArgs([]string{"-mode", "ordered"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ack != "none" {
		t.Errorf("ordered: ack %q, want none", cfg.ack)
	}
	cfg, err = parseJSConsumeArgs([]string{"-ack", "none", "-batch", "7", "-timeout", "3s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.mode != "consume" || cfg.ack != "none" || cfg.batch != 7 || cfg.timeout != 3*time.Second {
		t.Errorf("parsed %+v", cfg)
	}
	for _, args := range [][]string{
		{"-mode", "push"},
		{"-mode", "ordered", "-ack", "explicit"},
		{"-ack", "all"},
		{"-batch", "0"},
		{"-msgs", "0"},
		{"-size", "-1"},
		{"-timeout", "0s"},
		{"-stream", "a.b"},
		{"-subject", "a b"},
		{"extra"},
	} {
		if _, err := parseJSConsumeArgs(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The pull consumer is configured as msgbench's js consume configures its own.
func TestJSConsumerConfig(t *testing.T) {
	c := jsConsumerConfig(42, 500, "explicit")
	if c.DeliverPolicy != jetstream.DeliverByStartSequencePolicy || c.OptStartSeq != 42 {
		t.Errorf("start: %v at %d", c.DeliverPolicy, c.OptStartSeq)
	}
	if c.AckPolicy != jetstream.AckExplicitPolicy || c.MaxAckPending != 2000 || c.MaxWaiting != 512 || c.InactiveThreshold != time.Minute {
		t.Errorf("explicit: %+v", c)
	}
	if c := jsConsumerConfig(1, 10, "explicit"); c.MaxAckPending != 1000 {
		t.Errorf("small batch: max ack pending %d, want 1000", c.MaxAckPending)
	}
	if c := jsConsumerConfig(1, 500, "none"); c.AckPolicy != jetstream.AckNonePolicy || c.MaxAckPending != 0 {
		t.Errorf("none: %+v", c)
	}
}

func TestSeqTracker(t *testing.T) {
	tr := newSeqTracker(10, 4)
	for _, seq := range []uint64{10, 12, 12, 9, 14, 11} {
		if tr.record(seq) {
			t.Fatalf("done after %d", seq)
		}
	}
	if tr.remaining() != 1 {
		t.Errorf("remaining %d, want 1", tr.remaining())
	}
	if !tr.record(13) {
		t.Error("not done after the last sequence")
	}
	if tr.received != 7 || tr.distinct != 4 || tr.duplicates != 1 || tr.unexpected != 2 {
		t.Errorf("received %d distinct %d duplicates %d unexpected %d; want 7, 4, 1, 2",
			tr.received, tr.distinct, tr.duplicates, tr.unexpected)
	}
	if tr.lastAt <= 0 {
		t.Error("the completing delivery's time was not recorded")
	}
}

func TestJSConsumeAgainstServer(t *testing.T) {
	url := startServer(t, "-js", "-sd", t.TempDir())
	for _, tc := range []struct{ mode, ack string }{
		{"fetch", "explicit"},
		{"fetch", "none"},
		{"consume", "explicit"},
		{"consume", "none"},
		{"ordered", "none"},
	} {
		// Two runs each: the second purges the first's messages and must
		// start at the first new sequence. 1000 messages in pulls of 300
		// leave a short last fetch.
		for run := 0; run < 2; run++ {
			res, err := runJSConsume(jsConsumeConfig{
				config: config{url: url, msgs: 1000, size: 64, subject: "C.x"},
				stream: "C", mode: tc.mode, batch: 300, ack: tc.ack, timeout: 5 * time.Second,
			})
			if err != nil {
				t.Fatalf("%s/%s run %d: %v", tc.mode, tc.ack, run, err)
			}
			if !res.Reconciled || res.Received != 1000 || res.Distinct != 1000 || res.Missing != 0 || res.AckErrors != 0 {
				t.Errorf("%s/%s run %d: %+v", tc.mode, tc.ack, run, res)
			}
			if res.Seconds <= 0 || res.MsgsPerSec <= 0 || res.FillMsgsPerSec <= 0 || res.Consume != tc.mode || res.Ack != tc.ack {
				t.Errorf("%s/%s run %d: %+v", tc.mode, tc.ack, run, res)
			}
		}
	}
	// Every run deleted its consumer.
	nc, err := connect(url, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := js.Stream(ctx, "C")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Errorf("%d consumers left on the stream", info.State.Consumers)
	}
}

// A run that cannot get every message ends after -timeout without
// progress instead of hanging: here the stream is empty.
func TestConsumingStopsWithoutProgress(t *testing.T) {
	url := startServer(t, "-js", "-sd", t.TempDir())
	nc, err := connect(url, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := js.CreateStream(ctx, jsStreamConfig("E", "E.x"))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.CreateConsumer(ctx, jsConsumerConfig(1, 10, "none"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := jsConsumeConfig{batch: 10, timeout: 300 * time.Millisecond}
	for _, mode := range []string{"fetch", "consume"} {
		tr := newSeqTracker(1, 5)
		start := time.Now()
		if mode == "fetch" {
			err = fetchAll(cons, tr, func(jetstream.Msg) {}, cfg)
		} else {
			err = consumeAll(cons, tr, make(chan struct{}), func(jetstream.Msg) {}, nil, cfg)
		}
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s took %v on an empty stream", mode, d)
		}
		if tr.remaining() != 5 {
			t.Errorf("%s: remaining %d, want 5", mode, tr.remaining())
		}
	}
}
