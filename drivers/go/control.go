package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// control is what every load loop consults: the run's clock and whether to
// stop sending. All times in the driver are ns offsets from start on Go's
// monotonic clock (time.Since uses the monotonic reading of time.Now), so
// send, due and receive times taken on different goroutines compare.
type control struct {
	// start is set once, by begin; handlers that may run on other
	// goroutines read it atomically.
	start atomic.Pointer[time.Time]

	// halted is set when sending must end: the duration is over, the
	// counted run hit maxCountedRun, or msgbench said stop.
	halted   atomic.Bool
	haltCh   chan struct{}
	haltOnce sync.Once

	// interrupted is set when msgbench said stop (or closed stdin), at
	// stoppedAt (wall time, for the drain's budget).
	interrupted atomic.Bool
	stoppedAt   atomic.Pointer[time.Time]

	timeout time.Duration // the scenario's timeout_ms
}

func newControl(timeout time.Duration) *control {
	return &control{haltCh: make(chan struct{}), timeout: timeout}
}

// begin starts the clock and arms the end of the sending part.
func (c *control) begin(limit time.Duration) {
	t := time.Now()
	c.start.Store(&t)
	time.AfterFunc(limit, c.halt)
}

// now is the time since start in ns (0 before start).
func (c *control) now() int64 {
	t := c.start.Load()
	if t == nil {
		return 0
	}
	return int64(time.Since(*t))
}

func (c *control) halt() {
	c.haltOnce.Do(func() {
		c.halted.Store(true)
		close(c.haltCh)
	})
}

// interrupt is msgbench's stop: stop sending now, drain for at most
// timeout_ms.
func (c *control) interrupt() {
	t := time.Now()
	c.stoppedAt.CompareAndSwap(nil, &t)
	c.interrupted.Store(true)
	c.halt()
}

func (c *control) isHalted() bool { return c.halted.Load() }

// Pacing. Go's runtime timers are serviced by the netpoller, which on
// Linux waits in whole milliseconds: a time.Sleep of 300 µs takes about
// 1 ms when the process is otherwise idle, so a schedule kept with timers
// alone sends most messages several hundred µs late. So waitUntil uses a
// timer (interruptible by halt) only for waits longer than timerAbove,
// ending timerEarly before the due time; then a precise sleep (nanosleep
// on Linux, see sleep_linux.go) to spinMargin before it; then yields until
// it. Measured on a loaded 2-core machine at 1,000 msgs/s: timers alone
// were late by 500 µs at the median, this by a few µs.
const (
	timerAbove = 5 * time.Millisecond
	timerEarly = 3 * time.Millisecond
	spinMargin = 60 * time.Microsecond
)

// waitUntil blocks until the offset due (ns from start), or until the run
// is halted; it reports whether the message should still be sent. A halt
// is seen within timerAbove at worst.
func (c *control) waitUntil(due int64) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if c.isHalted() {
			return false
		}
		rem := time.Duration(due - c.now())
		switch {
		case rem <= 0:
			return true
		case rem > timerAbove:
			d := rem - timerEarly
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-c.haltCh:
				return false
			}
		case rem > spinMargin:
			preciseSleep(rem - spinMargin)
		default:
			runtime.Gosched()
		}
	}
}

// drain waits until done reports true. A run that ended normally waits as
// long as progress() keeps changing, giving up after timeout_ms without
// change; an interrupted run waits until timeout_ms after the stop at most
// (the final flush, if any, counts against that too). It reports whether
// done became true.
func (c *control) drain(done func() bool, progress func() int64) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	last, lastChange := progress(), time.Now()
	for !done() {
		<-tick.C
		now := time.Now()
		if at := c.stoppedAt.Load(); at != nil && now.Sub(*at) >= c.timeout {
			return false
		}
		if p := progress(); p != last {
			last, lastChange = p, now
		} else if now.Sub(lastChange) >= c.timeout {
			return false
		}
	}
	return true
}

// span is one client's first and last event, ns offsets from start. It
// may be marked from several goroutines (a requester's in-flight workers).
type span struct {
	first, last atomic.Int64
	seen        atomic.Bool
}

func (s *span) mark(t int64) {
	if s.seen.CompareAndSwap(false, true) {
		s.first.Store(t)
	}
	for {
		l := s.last.Load()
		if t <= l || s.last.CompareAndSwap(l, t) {
			return
		}
	}
}

// seconds is last - first; from0 counts from the run's start instead.
func (s *span) seconds(from0 bool) float64 {
	if !s.seen.Load() {
		return 0
	}
	first := s.first.Load()
	if from0 {
		first = 0
	}
	d := s.last.Load() - first
	if d < 0 {
		return 0
	}
	return float64(d) / 1e9
}
