//go:build !linux

package main

import "time"

// preciseSleep is time.Sleep where the driver has no nanosleep(2) at hand.
func preciseSleep(d time.Duration) { time.Sleep(d) }
