package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

func stamp(seq uint64, pub int) []byte {
	p := make([]byte, 32)
	putStamp(p, seq, pub)
	return p
}

func limitsOf(sent ...int64) []*atomic.Int64 {
	ls := make([]*atomic.Int64, len(sent))
	for i, s := range sent {
		ls[i] = new(atomic.Int64)
		ls[i].Store(s)
	}
	return ls
}

func TestSeqTracker(t *testing.T) {
	var tr seqTracker
	for _, s := range []uint64{0, 1, 3, 2, 2, 5, 4, 0, 100000} {
		tr.record(s)
	}
	// 2 after 3 and 4 after 5 are reordered; the second 2 and the second
	// 0 are duplicates.
	if tr.unique != 7 || tr.duplicated != 2 || tr.reordered != 2 {
		t.Fatalf("unique %d dup %d reo %d, want 7 2 2", tr.unique, tr.duplicated, tr.reordered)
	}
	// A duplicate arriving long after is still known.
	tr.record(1)
	if tr.duplicated != 3 {
		t.Fatalf("late duplicate not seen: %d", tr.duplicated)
	}
}

func TestDeliveryExact(t *testing.T) {
	sent := limitsOf(4, 3)
	a := newDeliveryLog(true, sent)
	b := newDeliveryLog(true, sent)
	for _, m := range [][]byte{stamp(0, 0), stamp(1, 0), stamp(3, 0), stamp(2, 0), stamp(0, 1), stamp(1, 1), stamp(2, 1)} {
		a.record(m)
	}
	// b misses publisher 0's 1, gets publisher 1's 0 twice, and one
	// message that is not this run's (seq past what was sent).
	for _, m := range [][]byte{stamp(0, 0), stamp(2, 0), stamp(3, 0), stamp(0, 1), stamp(0, 1), stamp(1, 1), stamp(2, 1), stamp(9, 1), stamp(0, 7)} {
		b.record(m)
	}
	if b.foreign != 2 {
		t.Fatalf("foreign %d, want 2", b.foreign)
	}
	d := summarize(true, []int64{4, 3}, []*deliveryLog{a, b})
	if d.Accounting != "exact" || d.Sent != 7 || d.Received != 16 || d.Lost != 1 || *d.Duplicated != 1 || *d.Reordered != 1 {
		t.Fatalf("delivery %+v dup %d reo %d", d, *d.Duplicated, *d.Reordered)
	}
}

func TestDeliveryCount(t *testing.T) {
	sent := limitsOf(0)
	a := newDeliveryLog(false, sent)
	b := newDeliveryLog(false, sent)
	for range 10 {
		a.record([]byte{1})
	}
	for range 7 {
		b.record(nil)
	}
	d := summarize(false, []int64{10}, []*deliveryLog{a, b})
	if d.Accounting != "count" || d.Received != 17 || d.Lost != 3 || d.Duplicated != nil || d.Reordered != nil {
		t.Fatalf("delivery %+v", d)
	}
	if d := summarize(false, []int64{10}, nil); d.Accounting != "none" || d.Lost != 0 {
		t.Fatalf("no subscribers: %+v", d)
	}
}

// deliveryCounts are the counts a vector of spec/vectors/delivery expects,
// in total and per publisher.
type deliveryCounts struct {
	Sent       int64 `json:"sent"`
	Received   int64 `json:"received"`
	Unique     int64 `json:"unique"`
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	Reordered  int64 `json:"reordered"`
}

// deliveryVector is one file of spec/vectors/delivery.
type deliveryVector struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Sent        []int64     `json:"sent"`
	Arrivals    [][2]uint64 `json:"arrivals"` // [publisher, seq]
	Expect      struct {
		deliveryCounts
		Accounting string `json:"accounting"`
		Publishers []struct {
			ID int `json:"id"`
			deliveryCounts
		} `json:"publishers"`
	} `json:"expect"`
}

const deliveryVectorDir = "../../spec/vectors/delivery"

func loadDeliveryVectors(t *testing.T) []deliveryVector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deliveryVectorDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vectors in %s", deliveryVectorDir)
	}
	var vs []deliveryVector
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v deliveryVector
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields() // a misspelt count must not pass as 0
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if v.Name+".json" != filepath.Base(f) {
			t.Fatalf("%s: name %q does not match the file", f, v.Name)
		}
		vs = append(vs, v)
	}
	return vs
}

// TestDeliveryVectors feeds each vector's arrivals to one subscriber's
// deliveryLog and checks every count of the summary and of each
// publisher's tracker.
func TestDeliveryVectors(t *testing.T) {
	for _, v := range loadDeliveryVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			log := newDeliveryLog(true, limitsOf(v.Sent...))
			for _, a := range v.Arrivals {
				log.record(stamp(a[1], int(a[0])))
			}
			if log.foreign != 0 {
				t.Fatalf("%d arrivals taken as foreign: the vector is out of bounds", log.foreign)
			}
			d := summarize(true, v.Sent, []*deliveryLog{log})
			if d.Duplicated == nil || d.Reordered == nil {
				t.Fatalf("duplicated or reordered unknown: %+v", d)
			}
			got := deliveryCounts{d.Sent, d.Received, log.unique(), d.Lost, *d.Duplicated, *d.Reordered}
			if got != v.Expect.deliveryCounts || d.Accounting != v.Expect.Accounting {
				t.Errorf("total: got %+v %s, want %+v %s", got, d.Accounting, v.Expect.deliveryCounts, v.Expect.Accounting)
			}
			if len(v.Expect.Publishers) != len(v.Sent) {
				t.Fatalf("%d publishers expected, %d sent", len(v.Expect.Publishers), len(v.Sent))
			}
			for p, want := range v.Expect.Publishers {
				tr := &log.trackers[p]
				// Per publisher, as msgbench counts it: received = unique +
				// duplicated, lost = sent - unique.
				got := deliveryCounts{v.Sent[p], tr.unique + tr.duplicated, tr.unique, max(0, v.Sent[p]-tr.unique), tr.duplicated, tr.reordered}
				if want.ID != p || got != want.deliveryCounts {
					t.Errorf("publisher %d: got %+v, want id %d %+v", p, got, want.ID, want.deliveryCounts)
				}
			}
		})
	}
}
