package main

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// scenario is the first line msgbench writes.
type scenario struct {
	Type             string   `json:"type"`
	Protocol         string   `json:"protocol"`
	Kind             string   `json:"kind"`
	Server           string   `json:"server"`
	Subject          string   `json:"subject"`
	Size             int      `json:"size"`
	Msgs             *int64   `json:"msgs"`
	DurationMs       *int64   `json:"duration_ms"`
	Rate             float64  `json:"rate"`
	Pubs             int      `json:"pubs"`
	Subs             int      `json:"subs"`
	InFlight         int      `json:"in_flight"`
	WarmupMs         int64    `json:"warmup_ms"`
	TimeoutMs        int64    `json:"timeout_ms"`
	ConnectTimeoutMs int64    `json:"connect_timeout_ms"`
	JS               *jsParam `json:"js"`
}

type jsParam struct {
	Stream string `json:"stream"`
	Mode   string `json:"mode"`
}

// scenarioError is a scenario the driver cannot run, with the protocol's
// error kind (usage or unsupported).
type scenarioError struct {
	kind string
	msg  string
}

func (e *scenarioError) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &scenarioError{kind: errUsage, msg: fmt.Sprintf(format, a...)}
}

// maxCountedRun bounds a run given by a message count in time, so that no
// load loop runs unbounded even if the server stalls without failing.
const maxCountedRun = time.Hour

// maxDurationRunMsgs bounds a run given by a duration in count.
const maxDurationRunMsgs = int64(1) << 40

// stampSize is the smallest payload that carries the stamp: sequence
// number (LE u64, bytes 0..8) and publisher index (LE u64, bytes 8..16).
const stampSize = 16

// maxPayload bounds size before anything is allocated; the server refuses
// anything above its max_payload (1 MiB by default, 64 MiB at most).
const maxPayload = 64 << 20

func parseScenario(line []byte) (*scenario, error) {
	var sc scenario
	if err := json.Unmarshal(line, &sc); err != nil {
		return nil, usageErr("the first line is not a scenario: %v", err)
	}
	if err := sc.validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

func (sc *scenario) validate() error {
	if sc.Type != "scenario" {
		return usageErr("expected a scenario line first, got type %q", sc.Type)
	}
	if sc.Protocol != protocolVersion {
		return usageErr("protocol %q is not %q", sc.Protocol, protocolVersion)
	}
	switch sc.Kind {
	case "pubsub", "latency", "request", "js_pub":
	default:
		return &scenarioError{kind: errUnsupported, msg: fmt.Sprintf("kind %q is not supported by this driver", sc.Kind)}
	}
	if (sc.Msgs == nil) == (sc.DurationMs == nil) {
		return usageErr("exactly one of msgs and duration_ms must be set")
	}
	if sc.Msgs != nil && *sc.Msgs < 1 {
		return usageErr("msgs must be >= 1")
	}
	if sc.DurationMs != nil && *sc.DurationMs < 1 {
		return usageErr("duration_ms must be >= 1")
	}
	switch {
	case sc.Server == "":
		return usageErr("server is empty")
	case sc.Subject == "":
		return usageErr("subject is empty")
	case sc.Size < 0 || sc.Size > maxPayload:
		return usageErr("size %d out of range 0..%d", sc.Size, maxPayload)
	case sc.Rate < 0 || math.IsNaN(sc.Rate) || math.IsInf(sc.Rate, 0):
		return usageErr("rate must be a finite number >= 0")
	case sc.Pubs < 1:
		return usageErr("pubs must be >= 1")
	case sc.Subs < 0:
		return usageErr("subs must be >= 0")
	case sc.InFlight < 1:
		return usageErr("in_flight must be >= 1")
	case sc.WarmupMs < 0:
		return usageErr("warmup_ms must be >= 0")
	case sc.TimeoutMs < 1:
		return usageErr("timeout_ms must be >= 1")
	case sc.ConnectTimeoutMs < 1:
		return usageErr("connect_timeout_ms must be >= 1")
	}
	if sc.Kind == "latency" && sc.Rate <= 0 {
		return usageErr("latency needs a rate > 0")
	}
	if sc.Kind == "js_pub" {
		if sc.JS == nil || sc.JS.Stream == "" {
			return usageErr("js_pub needs js.stream")
		}
		if sc.JS.Mode != "sync" && sc.JS.Mode != "async" {
			return usageErr("js.mode must be sync or async, not %q", sc.JS.Mode)
		}
	}
	if sc.Kind == "latency" && sc.DurationMs != nil {
		// The latency publisher keeps every send time; bound that array.
		if n := sc.Rate * float64(*sc.DurationMs) / 1000; n > float64(maxLatencyMsgs) {
			return usageErr("latency at %g msgs/s for %d ms is more than %d messages", sc.Rate, *sc.DurationMs, maxLatencyMsgs)
		}
	}
	if sc.Kind == "latency" && sc.Msgs != nil && *sc.Msgs > maxLatencyMsgs {
		return usageErr("latency with more than %d messages", maxLatencyMsgs)
	}
	return nil
}

func (sc *scenario) timeout() time.Duration {
	return time.Duration(sc.TimeoutMs) * time.Millisecond
}

func (sc *scenario) connectTimeout() time.Duration {
	return time.Duration(sc.ConnectTimeoutMs) * time.Millisecond
}

// perClientLimit is how many messages one publisher (or requester) sends at
// most: msgs, or for a timed run a count bound that is never reached in
// practice (the duration ends the run).
func (sc *scenario) perClientLimit() int64 {
	if sc.Msgs != nil {
		return *sc.Msgs
	}
	return maxDurationRunMsgs
}

// runLimit is how long the sending part of the run lasts at most.
func (sc *scenario) runLimit() time.Duration {
	if sc.DurationMs != nil {
		return time.Duration(*sc.DurationMs) * time.Millisecond
	}
	return maxCountedRun
}

func (sc *scenario) stamped() bool { return sc.Size >= stampSize }

// schedule is an open-loop timetable: message k (counted across all
// clients) is due k/rate seconds after the start. A client c of n sends
// the messages k = i*n + c, so the clients interleave evenly and the total
// rate is the scenario's.
type schedule struct {
	rate    float64 // messages per second, all clients together
	clients int
}

// due is the offset from the start, in ns, at which client c's i-th
// message is due.
func (s schedule) due(c int, i int64) int64 {
	k := float64(i)*float64(s.clients) + float64(c)
	return int64(k * 1e9 / s.rate)
}
