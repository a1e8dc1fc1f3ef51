package main

import (
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in ns into HdrHistograms of 1 ns .. 1 h with 3
// significant digits, as msgbench's own.
const (
	histLowest  = 1
	histHighest = 3_600_000_000_000
	histDigits  = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// latencyHist is a histogram that several goroutines record into.
type latencyHist struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
	// clamped counts values outside 0 .. 1 h, recorded at the nearer end.
	clamped int64
}

func newLatencyHist() *latencyHist { return &latencyHist{h: newHistogram()} }

func (l *latencyHist) record(ns int64) {
	l.mu.Lock()
	l.recordLocked(ns)
	l.mu.Unlock()
}

// recordLocked records with l.mu held (or when only one goroutine records).
func (l *latencyHist) recordLocked(ns int64) {
	switch {
	case ns < 0:
		ns = 0
		l.clamped++
	case ns > histHighest:
		ns = histHighest
		l.clamped++
	}
	// Cannot fail: ns is in range.
	_ = l.h.RecordValue(ns)
}

// summary encodes the histogram for the result: base64 of the V2
// deflate-compressed encoding, which is what hdrhistogram-go's Encode
// returns (already base64).
func (l *latencyHist) summary() (*histSummary, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	enc, err := l.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, err
	}
	return &histSummary{Count: l.h.TotalCount(), HDR: string(enc)}, nil
}
