package main

import "sync/atomic"

// Delivery accounting, exact, by the rules of msgbench's own (its
// stats/delivery.rs, and spec/vectors/delivery): a subscriber keeps, per
// publisher, a bitset of the sequence numbers it has seen (1 bit per
// message sent, so 125 KB per million) and the highest one.
//
//   - a sequence seen before is duplicated;
//   - a sequence below the highest seen that was not seen before is
//     reordered;
//   - lost = sent - distinct sequences seen, per (publisher, subscriber),
//     summed.
//
// Unlike msgbench's native 8,192-wide window the bitset never forgets, so
// duplicates are exact however late they come.
//
// The same three pieces, by the same names, are in every driver:
// seqTracker (one publisher at one subscriber), deliveryLog (one
// subscriber) and summarize (the result's delivery section); each records
// with record.

// seqTracker follows one publisher's sequence numbers at one subscriber.
type seqTracker struct {
	seen       []uint64 // bitset
	highest    uint64
	any        bool
	unique     int64
	duplicated int64
	reordered  int64
}

// record accounts one sequence number and reports whether it was new.
func (t *seqTracker) record(seq uint64) bool {
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

// deliveryLog is one subscriber's (or requester's reply side) accounting of
// what it received from the publishers. limits[p] is how many messages
// publisher p has sent so far: a stamp at or past it is not one of this
// run's messages (and would only make the bitset grow), so it is counted
// as foreign instead.
type deliveryLog struct {
	stamped  bool
	limits   []*atomic.Int64
	trackers []seqTracker
	received int64
	bytes    int64
	foreign  int64
}

func newDeliveryLog(stamped bool, limits []*atomic.Int64) *deliveryLog {
	l := &deliveryLog{stamped: stamped, limits: limits}
	if stamped {
		l.trackers = make([]seqTracker, len(limits))
	}
	return l
}

// record accounts one received payload and reports whether it is a message
// not received before (always true unstamped: counts cannot tell).
func (l *deliveryLog) record(data []byte) bool {
	l.received++
	l.bytes += int64(len(data))
	if !l.stamped {
		return true
	}
	seq, pub, ok := readStamp(data)
	if !ok || pub >= uint64(len(l.trackers)) || seq >= uint64(l.limits[pub].Load()) {
		l.foreign++
		return false
	}
	return l.trackers[pub].record(seq)
}

// unique is the number of distinct messages received (stamped) or all
// received messages (unstamped).
func (l *deliveryLog) unique() int64 {
	if !l.stamped {
		return l.received
	}
	var n int64
	for i := range l.trackers {
		n += l.trackers[i].unique
	}
	return n
}

// summarize sums the subscribers' logs against what the publishers sent
// (sent[p]) into the result's delivery section. Every subscriber is
// expected to get every message.
func summarize(stamped bool, sent []int64, logs []*deliveryLog) delivery {
	var total int64
	for _, s := range sent {
		total += s
	}
	d := delivery{Sent: total}
	if len(logs) == 0 {
		d.Accounting = "none"
		return d
	}
	if !stamped {
		d.Accounting = "count"
		for _, l := range logs {
			d.Received += l.received
			d.Lost += max(0, total-l.received)
		}
		return d
	}
	d.Accounting = "exact"
	var dup, reo int64
	for _, l := range logs {
		d.Received += l.received
		for p := range l.trackers {
			t := &l.trackers[p]
			d.Lost += max(0, sent[p]-t.unique)
			dup += t.duplicated
			reo += t.reordered
		}
	}
	d.Duplicated, d.Reordered = &dup, &reo
	return d
}
