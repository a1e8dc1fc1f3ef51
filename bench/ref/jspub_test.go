package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestParseJSPubArgs(t *testing.T) {
	cfg, err := parseJSPubArgs([]string{"-mode", "sync", "-msgs", "20000", "-stream", "S", "-subject", "S.x"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.publish != "sync" || cfg.msgs != 20000 || cfg.size != 128 || cfg.maxInFlight != 256 || cfg.batch != 100 || cfg.stream != "S" || cfg.subject != "S.x" {
		t.Errorf("parsed %+v", cfg)
	}
	cfg, err = parseJSPubArgs([]string{"-mode", "batch", "-batch", "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.publish != "batch" || cfg.batch != 1000 {
		t.Errorf("parsed %+v", cfg)
	}
	cfg, err = parseJSPubArgs([]string{"-mode", "fast", "-batch", "500", "-max-outstanding-acks", "4", "-storage", "file", "-persist", "async"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.publish != "fast" || cfg.batch != 500 || cfg.outstanding != 4 || cfg.storage != "file" || cfg.persist != "async" {
		t.Errorf("parsed %+v", cfg)
	}
	for _, args := range [][]string{
		{"-mode", "fast", "-batch", "501"},
		{"-max-outstanding-acks", "0"},
		{"-storage", "tape"},
		{"-persist", "async"},
		{"-persist", "async", "-storage", "file", "-mode", "batch"},
		{"-mode", "atomic"},
		{"-mode", "batch", "-batch", "0"},
		{"-mode", "batch", "-batch", "1001"},
		{"-max-in-flight", "0"},
		{"-msgs", "0"},
		{"-size", "-1"},
		{"-stream", "a.b"},
		{"-stream", ""},
		{"-subject", "a b"},
		{"extra"},
	} {
		if _, err := parseJSPubArgs(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The stream must be the one msgbench's js pub creates with its defaults,
// or the two tools would not be measured against the same stream.
func TestJSStreamConfigMatchesMsgbench(t *testing.T) {
	c := jsStreamConfig("S", "S.x")
	if c.Name != "S" || len(c.Subjects) != 1 || c.Subjects[0] != "S.x" {
		t.Errorf("name and subjects: %+v", c)
	}
	if c.Storage != jetstream.MemoryStorage || c.Replicas != 1 || c.MaxBytes != -1 || c.Discard != jetstream.DiscardOld {
		t.Errorf("storage %v, replicas %d, max bytes %d, discard %v", c.Storage, c.Replicas, c.MaxBytes, c.Discard)
	}
	if c.Retention != jetstream.LimitsPolicy || c.MaxMsgs != 0 || c.MaxAge != 0 || c.MaxMsgsPerSubject != 0 {
		t.Errorf("limits set: %+v", c)
	}
}

// In batch mode the stream is msgbench's batch-mode stream: the same, but
// accepting atomic batches.
func TestJSBatchStreamConfig(t *testing.T) {
	if jsStreamConfig("S", "S.x").AllowAtomicPublish {
		t.Error("the sync/async stream allows atomic batches")
	}
	c := jsBatchStreamConfig("S", "S.x")
	if !c.AllowAtomicPublish {
		t.Error("the batch stream does not allow atomic batches")
	}
	c.AllowAtomicPublish = false
	if !reflect.DeepEqual(c, jsStreamConfig("S", "S.x")) {
		t.Errorf("the batch stream differs in more than allow_atomic: %+v", c)
	}
	// The field must reach the server under the name the server knows.
	b, err := json.Marshal(jsBatchStreamConfig("S", "S.x"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"allow_atomic":true`) {
		t.Errorf("no allow_atomic in %s", b)
	}
}

func TestBatchIDsUnique(t *testing.T) {
	a, err := newBatchIDs()
	if err != nil {
		t.Fatal(err)
	}
	b, err := newBatchIDs()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		for _, id := range []string{a.id(), b.id()} {
			if seen[id] || len(id) > 64 {
				t.Fatalf("id %q repeated or longer than 64", id)
			}
			seen[id] = true
		}
	}
}

func TestJSPubAgainstServer(t *testing.T) {
	url := startServer(t, "-js", "-sd", t.TempDir())
	for _, publish := range []string{"sync", "async", "batch", "fast"} {
		// Batch and fast modes need a stream that allows their batches,
		// which the others' stream does not; each gets one of its own.
		stream := "T"
		switch publish {
		case "batch":
			stream = "TB"
		case "fast":
			stream = "TF"
		}
		// Two runs per mode: the second finds the stream and purges it.
		for run := 0; run < 2; run++ {
			res, err := runJSPub(jsPubConfig{
				config:  config{url: url, msgs: 500, size: 128, subject: stream + ".x"},
				publish: publish, maxInFlight: 16, batch: 64, outstanding: 2, stream: stream,
				storage: "memory", persist: "default",
			})
			if err != nil {
				t.Fatalf("%s run %d: %v", publish, run, err)
			}
			if res.Acked != 500 || res.Failed != 0 || res.StreamMsgs != 500 {
				t.Errorf("%s run %d: acked %d failed %d stream %d, want 500, 0, 500", publish, run, res.Acked, res.Failed, res.StreamMsgs)
			}
			if res.MsgsPerSec <= 0 || res.Publish != publish || res.Persist != "default" {
				t.Errorf("%s run %d: %+v", publish, run, res)
			}
			// 500 messages in batches of 64: seven full ones and a short one.
			if publish == "batch" && (res.Batch != 64 || res.Batches != 8) {
				t.Errorf("batch run %d: batch %d, %d batches; want 64 and 8", run, res.Batch, res.Batches)
			}
		}
	}
}

// A batch the stream does not accept must count as failed, not as acked:
// a stream without allow_atomic refuses every commit.
func TestJSPubBatchRefused(t *testing.T) {
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
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jsStreamConfig("N", "N.x")); err != nil {
		t.Fatal(err)
	}
	ids, err := newBatchIDs()
	if err != nil {
		t.Fatal(err)
	}
	got, err := publishBatch(nc, "N.x", ids.id(), 10, payload(16), batchCommitTimeout)
	if err == nil || got != 0 {
		t.Errorf("batch into a stream without allow_atomic: %d acked, error %v", got, err)
	}
}

// A file stream with the async persist mode is created as asked, and the
// result says so (read back from the stream's info).
func TestJSPubPersistAsync(t *testing.T) {
	url := startServer(t, "-js", "-sd", t.TempDir())
	res, err := runJSPub(jsPubConfig{
		config:  config{url: url, msgs: 500, size: 128, subject: "P.x"},
		publish: "fast", maxInFlight: 16, batch: 100, outstanding: 2, stream: "P", storage: "file", persist: "async",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Acked != 500 || res.StreamMsgs != 500 || res.Persist != "async" {
		t.Errorf("%+v", res)
	}
}
