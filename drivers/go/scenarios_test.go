package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const scenarioVectorDir = "../../spec/vectors/scenarios"

type scenarioVector struct {
	Name     string         `json:"name"`
	Scenario map[string]any `json:"scenario"`
	Checks   []string       `json:"checks"`
	Setup    string         `json:"setup"`
}

func loadScenarioVectors(t *testing.T) []scenarioVector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(scenarioVectorDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vectors in %s", scenarioVectorDir)
	}
	var vs []scenarioVector
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v scenarioVector
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if v.Name == "" {
			v.Name = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		vs = append(vs, v)
	}
	return vs
}

var subjectSeq atomic.Int64

// uniqueSubject is a subject no other test (or run) uses.
func uniqueSubject(name string) string {
	return fmt.Sprintf("msgbench.gotest.%s.%d.%d", name, os.Getpid(), subjectSeq.Add(1))
}

// num is a number from a decoded line (json.Number) or a test's own
// scenario map (Go ints and floats).
func num(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	}
	f, _ := toFloat(v)
	return f
}

// setupFor does what msgbench does before it starts a driver: an echo
// responder in queue group "msgbench" for request, the stream for js_pub
// (memory storage, subjects = the scenario's subject, deleted afterwards).
// It returns the stream, if any.
func setupFor(t *testing.T, url string, sc map[string]any) jetstream.Stream {
	t.Helper()
	subject := sc["subject"].(string)
	switch sc["kind"] {
	case "request":
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if _, err := nc.QueueSubscribe(subject, "msgbench", func(m *nats.Msg) {
			_ = m.Respond(m.Data)
		}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	case "js_pub":
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		name := sc["js"].(map[string]any)["stream"].(string)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name:     name,
			Subjects: []string{subject},
			Storage:  jetstream.MemoryStorage,
		})
		if err != nil {
			t.Fatalf("create stream %s: %v", name, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := js.DeleteStream(ctx, name); err != nil {
				t.Errorf("delete stream %s: %v", name, err)
			}
		})
		return stream
	}
	return nil
}

// runScenario runs one scenario end to end (scenario, ready, start,
// progress..., result, exit 0) and returns the result.
func runScenario(t *testing.T, sc map[string]any) map[string]any {
	t.Helper()
	d := startDriver(t)
	d.send(sc)
	ready := d.expect("ready", time.Duration(num(sc["connect_timeout_ms"]))*time.Millisecond+10*time.Second)
	client := ready["client"].(map[string]any)
	if client["language"] != "go" || client["library"] != "nats.go" || !strings.HasPrefix(client["version"].(string), "v1.") {
		t.Fatalf("ready: client %v", client)
	}
	d.send(map[string]string{"type": "start"})
	res, _ := d.untilResult(60 * time.Second)
	if code := d.exitCode(10 * time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	return res
}

// TestScenarioVectors runs every spec/vectors/scenarios/*.json against a
// fresh nats-server and applies its checks.
func TestScenarioVectors(t *testing.T) {
	for _, v := range loadScenarioVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			url := startServer(t)
			sc := v.Scenario
			sc["server"] = url
			sc["subject"] = uniqueSubject(v.Name)
			stream := setupFor(t, url, sc)

			res := runScenario(t, sc)
			if res["interrupted"] != false {
				t.Errorf("interrupted: %v", res["interrupted"])
			}
			for _, c := range v.Checks {
				if err := evalCheck(res, c); err != nil {
					t.Error(err)
				}
			}
			for _, k := range []string{"latency", "latency_uncorrected"} {
				if h, ok := res[k].(map[string]any); ok {
					checkHistogram(t, k, h)
				}
			}
			if stream != nil {
				reconcileStream(t, stream, res)
			}
			t.Logf("%s: %s", v.Name, describeResult(res))
		})
	}
}

// checkHistogram decodes a result histogram: its count must be the
// summary's.
func checkHistogram(t *testing.T, name string, h map[string]any) {
	t.Helper()
	hist, err := decodeHDR(h["hdr"].(string))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if float64(hist.TotalCount()) != num(h["count"]) {
		t.Fatalf("%s: histogram holds %d values, count says %v", name, hist.TotalCount(), h["count"])
	}
}

// reconcileStream checks the reported acks against the stream, as
// msgbench does: the range holds exactly the acked sequences.
func reconcileStream(t *testing.T, stream jetstream.Stream, res map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js := res["js"].(map[string]any)
	acked, first, last := uint64(num(js["acked"])), uint64(num(js["first_seq"])), uint64(num(js["last_seq"]))
	if info.State.Msgs != acked || info.State.FirstSeq != first || info.State.LastSeq != last || last-first+1 != acked {
		t.Fatalf("stream holds %d msgs %d..%d; driver reports %d acked %d..%d",
			info.State.Msgs, info.State.FirstSeq, info.State.LastSeq, acked, first, last)
	}
}

// describeResult is a one-line account of a result for the test log.
func describeResult(res map[string]any) string {
	var b strings.Builder
	d := res["delivery"].(map[string]any)
	fmt.Fprintf(&b, "sent %v received %v lost %v dup %v reo %v (%v)", d["sent"], d["received"], d["lost"], d["duplicated"], d["reordered"], d["accounting"])
	for _, c := range res["clients"].([]any) {
		c := c.(map[string]any)
		if s := num(c["seconds"]); s > 0 {
			fmt.Fprintf(&b, "; %v %v: %.0f msgs/s", c["role"], c["id"], num(c["msgs"])/s)
		}
	}
	for _, k := range []string{"latency", "latency_uncorrected"} {
		h, ok := res[k].(map[string]any)
		if !ok {
			continue
		}
		if hist, err := decodeHDR(h["hdr"].(string)); err == nil && hist.TotalCount() > 0 {
			fmt.Fprintf(&b, "; %s p50 %.1f us p99 %.1f us max %.1f us", k,
				float64(hist.ValueAtQuantile(50))/1e3, float64(hist.ValueAtQuantile(99))/1e3, float64(hist.Max())/1e3)
		}
	}
	return b.String()
}
