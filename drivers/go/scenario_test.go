package main

import "testing"

func TestSchedule(t *testing.T) {
	s := schedule{rate: 1000, clients: 2}
	// Over both clients, message k is due at k ms.
	if got := s.due(0, 0); got != 0 {
		t.Fatal(got)
	}
	if got := s.due(1, 0); got != 1_000_000 {
		t.Fatal(got)
	}
	if got := s.due(0, 3); got != 6_000_000 {
		t.Fatal(got)
	}
}

func TestScenarioValidation(t *testing.T) {
	base := `{"type":"scenario","protocol":"msgbench.driver/v1","kind":"pubsub","server":"nats://127.0.0.1:1","subject":"x","size":8,"msgs":10,"duration_ms":null,"rate":0,"pubs":1,"subs":1,"in_flight":1,"warmup_ms":0,"timeout_ms":100,"connect_timeout_ms":100,"js":null}`
	if _, err := parseScenario([]byte(base)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ line, kind string }{
		{`{"type":"scenario","protocol":"msgbench.driver/v1","kind":"consume","server":"s","subject":"x","size":8,"msgs":10,"duration_ms":null,"rate":0,"pubs":1,"subs":1,"in_flight":1,"warmup_ms":0,"timeout_ms":100,"connect_timeout_ms":100,"js":null}`, errUnsupported},
		{`{"type":"scenario","protocol":"msgbench.driver/v2","kind":"pubsub"}`, errUsage},
		{`{"type":"scenario","protocol":"msgbench.driver/v1","kind":"pubsub","server":"s","subject":"x","size":8,"msgs":10,"duration_ms":5,"rate":0,"pubs":1,"subs":1,"in_flight":1,"warmup_ms":0,"timeout_ms":100,"connect_timeout_ms":100,"js":null}`, errUsage},
		{`{"type":"scenario","protocol":"msgbench.driver/v1","kind":"latency","server":"s","subject":"x","size":8,"msgs":10,"duration_ms":null,"rate":0,"pubs":1,"subs":1,"in_flight":1,"warmup_ms":0,"timeout_ms":100,"connect_timeout_ms":100,"js":null}`, errUsage},
		{`{"type":"scenario","protocol":"msgbench.driver/v1","kind":"js_pub","server":"s","subject":"x","size":8,"msgs":10,"duration_ms":null,"rate":0,"pubs":1,"subs":1,"in_flight":1,"warmup_ms":0,"timeout_ms":100,"connect_timeout_ms":100,"js":null}`, errUsage},
		{`not json`, errUsage},
	} {
		_, err := parseScenario([]byte(c.line))
		if err == nil || failKind(err) != c.kind {
			t.Errorf("%s: error %v (kind %q), want kind %q", c.line, err, failKind(err), c.kind)
		}
	}
}
