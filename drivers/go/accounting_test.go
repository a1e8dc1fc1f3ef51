package main

import (
	"sync/atomic"
	"testing"
)

func stamp(seq uint64, pub int) []byte {
	p := make([]byte, 32)
	putStamp(p, seq, pub)
	return p
}

func TestSeqTracker(t *testing.T) {
	var tr seqTracker
	for _, s := range []uint64{0, 1, 3, 2, 2, 5, 4, 0, 100000} {
		tr.add(s)
	}
	// 2 after 3 and 4 after 5 are reordered; the second 2 and the second
	// 0 are duplicates.
	if tr.unique != 7 || tr.duplicated != 2 || tr.reordered != 2 {
		t.Fatalf("unique %d dup %d reo %d, want 7 2 2", tr.unique, tr.duplicated, tr.reordered)
	}
	// A duplicate arriving long after is still known.
	tr.add(1)
	if tr.duplicated != 3 {
		t.Fatalf("late duplicate not seen: %d", tr.duplicated)
	}
}

func TestDeliveryExact(t *testing.T) {
	sent := []*atomic.Int64{new(atomic.Int64), new(atomic.Int64)}
	sent[0].Store(4)
	sent[1].Store(3)
	a := newReceiver(true, sent)
	b := newReceiver(true, sent)
	for _, m := range [][]byte{stamp(0, 0), stamp(1, 0), stamp(3, 0), stamp(2, 0), stamp(0, 1), stamp(1, 1), stamp(2, 1)} {
		a.add(m)
	}
	// b misses publisher 0's 1, gets publisher 1's 0 twice, and one
	// message that is not this run's (seq past what was sent).
	for _, m := range [][]byte{stamp(0, 0), stamp(2, 0), stamp(3, 0), stamp(0, 1), stamp(0, 1), stamp(1, 1), stamp(2, 1), stamp(9, 1), stamp(0, 7)} {
		b.add(m)
	}
	if b.foreign != 2 {
		t.Fatalf("foreign %d, want 2", b.foreign)
	}
	d := deliveryOf(true, []int64{4, 3}, []*receiver{a, b})
	if d.Accounting != "exact" || d.Sent != 7 || d.Received != 16 || d.Lost != 1 || *d.Duplicated != 1 || *d.Reordered != 1 {
		t.Fatalf("delivery %+v dup %d reo %d", d, *d.Duplicated, *d.Reordered)
	}
}

func TestDeliveryCount(t *testing.T) {
	sent := []*atomic.Int64{new(atomic.Int64)}
	a := newReceiver(false, sent)
	b := newReceiver(false, sent)
	for range 10 {
		a.add([]byte{1})
	}
	for range 7 {
		b.add(nil)
	}
	d := deliveryOf(false, []int64{10}, []*receiver{a, b})
	if d.Accounting != "count" || d.Received != 17 || d.Lost != 3 || d.Duplicated != nil || d.Reordered != nil {
		t.Fatalf("delivery %+v", d)
	}
	if d := deliveryOf(false, []int64{10}, nil); d.Accounting != "none" || d.Lost != 0 {
		t.Fatalf("no receivers: %+v", d)
	}
}

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
