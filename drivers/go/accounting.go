package main

import (
	"encoding/binary"
	"sync/atomic"
)

// Delivery accounting, exact: a receiver keeps, per publisher, a bitset of
// the sequence numbers it has seen (1 bit per message sent, so 125 KB per
// million) and the highest one.
//
//   - a sequence seen before is duplicated;
//   - a sequence below the highest seen that was not seen before is
//     reordered;
//   - lost = sent - distinct sequences seen, per (publisher, receiver),
//     summed.
//
// Unlike msgbench's native 8,192-wide window the bitset never forgets, so
// duplicates are exact however late they come.

// putStamp writes the stamp into a payload of at least stampSize bytes.
func putStamp(p []byte, seq uint64, pub int) {
	binary.LittleEndian.PutUint64(p[0:8], seq)
	binary.LittleEndian.PutUint64(p[8:16], uint64(pub))
}

// readStamp reads a stamp; ok is false for payloads too short to carry one.
func readStamp(p []byte) (seq uint64, pub uint64, ok bool) {
	if len(p) < stampSize {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(p[0:8]), binary.LittleEndian.Uint64(p[8:16]), true
}

// seqTracker follows one publisher's sequence numbers at one receiver.
type seqTracker struct {
	seen       []uint64 // bitset
	highest    uint64
	any        bool
	unique     int64
	duplicated int64
	reordered  int64
}

// add accounts one sequence number and reports whether it was new.
func (t *seqTracker) add(seq uint64) bool {
	w, bit := seq/64, uint64(1)<<(seq%64)
	if w >= uint64(len(t.seen)) {
		t.grow(w + 1)
	}
	if t.seen[w]&bit != 0 {
		t.duplicated++
		return false
	}
	t.seen[w] |= bit
	t.unique++
	switch {
	case !t.any:
		t.any, t.highest = true, seq
	case seq < t.highest:
		t.reordered++
	default:
		t.highest = seq
	}
	return true
}

func (t *seqTracker) grow(words uint64) {
	if words <= uint64(cap(t.seen)) {
		t.seen = t.seen[:words] // never written past len: still zero
		return
	}
	n := max(uint64(cap(t.seen)), 1024)
	for n < words {
		n *= 2
	}
	s := make([]uint64, words, n)
	copy(s, t.seen)
	t.seen = s
}

// receiver is one subscriber's (or requester's reply side) accounting of
// what it received from the publishers. limits[p] is how many messages
// publisher p has sent so far: a stamp at or past it is not one of this
// run's messages (and would only make the bitset grow), so it is counted
// as foreign instead.
type receiver struct {
	stamped  bool
	limits   []*atomic.Int64
	trackers []seqTracker
	received int64
	bytes    int64
	foreign  int64
}

func newReceiver(stamped bool, limits []*atomic.Int64) *receiver {
	r := &receiver{stamped: stamped, limits: limits}
	if stamped {
		r.trackers = make([]seqTracker, len(limits))
	}
	return r
}

// add accounts one received payload and reports whether it is a message
// not received before (always true unstamped: counts cannot tell).
func (r *receiver) add(data []byte) bool {
	r.received++
	r.bytes += int64(len(data))
	if !r.stamped {
		return true
	}
	seq, pub, ok := readStamp(data)
	if !ok || pub >= uint64(len(r.trackers)) || seq >= uint64(r.limits[pub].Load()) {
		r.foreign++
		return false
	}
	return r.trackers[pub].add(seq)
}

// unique is the number of distinct messages received (stamped) or all
// received messages (unstamped).
func (r *receiver) unique() int64 {
	if !r.stamped {
		return r.received
	}
	var n int64
	for i := range r.trackers {
		n += r.trackers[i].unique
	}
	return n
}

// deliveryOf sums the receivers' accounting against what the publishers
// sent (sent[p]). Every receiver is expected to get every message.
func deliveryOf(stamped bool, sent []int64, rs []*receiver) delivery {
	var total int64
	for _, s := range sent {
		total += s
	}
	d := delivery{Sent: total}
	if len(rs) == 0 {
		d.Accounting = "none"
		return d
	}
	if !stamped {
		d.Accounting = "count"
		for _, r := range rs {
			d.Received += r.received
			d.Lost += max(0, total-r.received)
		}
		return d
	}
	d.Accounting = "exact"
	var dup, reo int64
	for _, r := range rs {
		d.Received += r.received
		for p := range r.trackers {
			t := &r.trackers[p]
			d.Lost += max(0, sent[p]-t.unique)
			dup += t.duplicated
			reo += t.reordered
		}
	}
	d.Duplicated, d.Reordered = &dup, &reo
	return d
}
