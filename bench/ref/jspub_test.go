package main

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestParseJSPubArgs(t *testing.T) {
	cfg, err := parseJSPubArgs([]string{"-mode", "sync", "-msgs", "20000", "-stream", "S", "-subject", "S.x"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.publish != "sync" || cfg.msgs != 20000 || cfg.size != 128 || cfg.maxInFlight != 256 || cfg.stream != "S" || cfg.subject != "S.x" {
		t.Errorf("parsed %+v", cfg)
	}
	for _, args := range [][]string{
		{"-mode", "batch"},
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

func TestJSPubAgainstServer(t *testing.T) {
	url := startServer(t, "-js", "-sd", t.TempDir())
	for _, publish := range []string{"sync", "async"} {
		// Two runs per mode: the second finds the stream and purges it.
		for run := 0; run < 2; run++ {
			res, err := runJSPub(jsPubConfig{
				config:  config{url: url, msgs: 500, size: 128, subject: "T.x"},
				publish: publish, maxInFlight: 16, stream: "T",
			})
			if err != nil {
				t.Fatalf("%s run %d: %v", publish, run, err)
			}
			if res.Acked != 500 || res.Failed != 0 || res.StreamMsgs != 500 {
				t.Errorf("%s run %d: acked %d failed %d stream %d, want 500, 0, 500", publish, run, res.Acked, res.Failed, res.StreamMsgs)
			}
			if res.MsgsPerSec <= 0 || res.Publish != publish {
				t.Errorf("%s run %d: %+v", publish, run, res)
			}
		}
	}
}
