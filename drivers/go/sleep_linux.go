package main

import (
	"syscall"
	"time"
)

// preciseSleep sleeps d with nanosleep(2), which the kernel's high
// resolution timers end within tens of µs, instead of a runtime timer
// (millisecond steps when the process is idle). It blocks the goroutine's
// thread, which the runtime allows for: the P goes to another thread if
// other goroutines need it.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
