package main

import (
	"strconv"
	"testing"
	"time"
)

// baseScenario is a scenario line for the protocol tests.
func baseScenario(url, subject, kind string) map[string]any {
	return map[string]any{
		"type": "scenario", "protocol": "msgbench.driver/v1", "kind": kind,
		"server": url, "subject": subject, "size": 64,
		"msgs": nil, "duration_ms": 60000, "rate": 0,
		"pubs": 1, "subs": 1, "in_flight": 1, "warmup_ms": 0,
		"timeout_ms": 2000, "connect_timeout_ms": 2000, "js": nil,
	}
}

// TestStopMidRun starts a 60 s run of each kind, says stop (or closes
// stdin) after a moment, and wants an interrupted result promptly: sending
// stops at once and the drain takes at most timeout_ms.
func TestStopMidRun(t *testing.T) {
	cases := []struct {
		name  string
		kind  string
		tweak func(sc map[string]any)
		eof   bool // close stdin instead of writing stop
	}{
		{name: "pubsub", kind: "pubsub"},
		{name: "pubsub_stdin_eof", kind: "pubsub", eof: true},
		{name: "latency", kind: "latency", tweak: func(sc map[string]any) { sc["rate"] = 200 }},
		{name: "request_closed", kind: "request", tweak: func(sc map[string]any) { sc["in_flight"] = 4 }},
		{name: "request_open", kind: "request", tweak: func(sc map[string]any) { sc["rate"] = 500; sc["in_flight"] = 8 }},
		{name: "js_pub_async", kind: "js_pub", tweak: func(sc map[string]any) {
			sc["in_flight"] = 32
			sc["js"] = map[string]any{"stream": "STOPTEST", "mode": "async"}
		}},
		{name: "js_pub_sync", kind: "js_pub", tweak: func(sc map[string]any) {
			sc["js"] = map[string]any{"stream": "STOPTEST", "mode": "sync"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := startServer(t)
			sc := baseScenario(url, uniqueSubject("stop"), c.kind)
			if c.tweak != nil {
				c.tweak(sc)
			}
			setupFor(t, url, sc)
			d := startDriver(t)
			d.send(sc)
			d.expect("ready", 12*time.Second)
			d.send(map[string]string{"type": "start"})
			// Let it run into its first progress line.
			d.expect("progress", 5*time.Second)
			stopAt := time.Now()
			if c.eof {
				_ = d.stdin.Close()
			} else {
				d.send(map[string]string{"type": "stop"})
			}
			timeout := time.Duration(num(sc["timeout_ms"])) * time.Millisecond
			res, _ := d.untilResult(timeout + 5*time.Second)
			took := time.Since(stopAt)
			if res["interrupted"] != true {
				t.Fatalf("interrupted is %v", res["interrupted"])
			}
			if took > timeout+time.Second {
				t.Fatalf("result %v after stop (timeout_ms %v)", took, timeout)
			}
			d.stdin.Close()
			if code := d.exitCode(10 * time.Second); code != 0 {
				t.Fatalf("exit status %d", code)
			}
			if sent := num(res["delivery"].(map[string]any)["sent"]); sent == 0 {
				t.Fatal("nothing was sent before the stop")
			}
			t.Logf("stopped after %v: %s", took.Round(time.Millisecond), describeResult(res))
		})
	}
}

// TestStopBeforeStart: a stop before start still gets a (empty,
// interrupted) result and exit 0.
func TestStopBeforeStart(t *testing.T) {
	url := startServer(t)
	sc := baseScenario(url, uniqueSubject("early"), "pubsub")
	d := startDriver(t)
	d.send(sc)
	d.expect("ready", 12*time.Second)
	d.send(map[string]string{"type": "stop"})
	res, _ := d.untilResult(10 * time.Second)
	if res["interrupted"] != true || num(res["delivery"].(map[string]any)["sent"]) != 0 {
		t.Fatalf("result %v", res)
	}
	if code := d.exitCode(10 * time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// expectError runs the driver on a scenario it must refuse: one error line
// of the given kind, nothing else, exit status 2.
func expectError(t *testing.T, sc map[string]any, kind string) {
	t.Helper()
	d := startDriver(t)
	d.send(sc)
	msg := d.expect("error", 15*time.Second)
	if msg["kind"] != kind {
		t.Fatalf("error kind %v, want %s: %v", msg["kind"], kind, msg["message"])
	}
	if code := d.exitCode(10 * time.Second); code != 2 {
		t.Fatalf("exit status %d, want 2", code)
	}
}

func TestUnsupportedKind(t *testing.T) {
	sc := baseScenario("nats://127.0.0.1:4222", "x", "js_consume")
	expectError(t, sc, "unsupported")
}

func TestConnectFailure(t *testing.T) {
	// A free port with no server behind it.
	sc := baseScenario("nats://127.0.0.1:"+strconv.Itoa(freePort(t)), "x", "pubsub")
	sc["connect_timeout_ms"] = 500
	expectError(t, sc, "connect")
}

func TestBadScenario(t *testing.T) {
	sc := baseScenario("nats://127.0.0.1:4222", "x", "pubsub")
	sc["msgs"] = 10 // and duration_ms: both set
	expectError(t, sc, "usage")
}
