package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// The lines of msgbench's driver protocol v1 (spec/driver-protocol.md).
// Every message this driver writes is one of the types below, marshalled as
// one JSON object per line on stdout.

const protocolVersion = "msgbench.driver/v1"

// Error kinds of the protocol's "error" line.
const (
	errUnsupported = "unsupported"
	errConnect     = "connect"
	errUsage       = "usage"
	errInternal    = "internal"
)

type clientInfo struct {
	Language string `json:"language"`
	Library  string `json:"library"`
	Version  string `json:"version"`
	Notes    string `json:"notes,omitempty"`
}

type readyLine struct {
	Type   string     `json:"type"`
	Client clientInfo `json:"client"`
}

type progressLine struct {
	Type     string  `json:"type"`
	TS       float64 `json:"t_s"`
	Sent     int64   `json:"sent"`
	Received int64   `json:"received"`
}

type errorLine struct {
	Type    string `json:"type"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type resultLine struct {
	Type   string `json:"type"`
	Result result `json:"result"`
}

// result is the driver's result object.
type result struct {
	Interrupted        bool             `json:"interrupted"`
	Clients            []clientSpan     `json:"clients"`
	Delivery           delivery         `json:"delivery"`
	Errors             map[string]int64 `json:"errors"`
	Latency            *histSummary     `json:"latency,omitempty"`
	LatencyUncorrected *histSummary     `json:"latency_uncorrected,omitempty"`
	JS                 *jsSummary       `json:"js,omitempty"`
}

// clientSpan is one connection that published or received.
type clientSpan struct {
	Role    string  `json:"role"`
	ID      int     `json:"id"`
	Msgs    int64   `json:"msgs"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// delivery is the result's delivery accounting. Duplicated and Reordered
// are null when they cannot be known (unstamped payloads, nothing received).
type delivery struct {
	Sent       int64  `json:"sent"`
	Received   int64  `json:"received"`
	Lost       int64  `json:"lost"`
	Duplicated *int64 `json:"duplicated"`
	Reordered  *int64 `json:"reordered"`
	Accounting string `json:"accounting"`
}

type histSummary struct {
	Count int64  `json:"count"`
	HDR   string `json:"hdr"`
}

type jsSummary struct {
	Acked         int64  `json:"acked"`
	FirstSeq      uint64 `json:"first_seq"`
	LastSeq       uint64 `json:"last_seq"`
	DuplicateAcks int64  `json:"duplicate_acks"`
}

// output writes protocol lines. One mutex guards stdout so that the
// progress ticker and the main goroutine never interleave; each line goes
// out in one write on an unbuffered file, so it is flushed when written.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

func newOutput(w io.Writer) *output { return &output{w: w} }

func (o *output) write(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	o.mu.Lock()
	defer o.mu.Unlock()
	_, err = o.w.Write(line)
	return err
}

func (o *output) ready(c clientInfo) error {
	return o.write(readyLine{Type: "ready", Client: c})
}

func (o *output) progress(ts float64, sent, received int64) error {
	return o.write(progressLine{Type: "progress", TS: ts, Sent: sent, Received: received})
}

func (o *output) result(r result) error {
	return o.write(resultLine{Type: "result", Result: r})
}

func (o *output) fail(kind, msg string) {
	if err := o.write(errorLine{Type: "error", Kind: kind, Message: msg}); err != nil {
		fmt.Fprintf(os.Stderr, "msgbench-driver-go: writing error line: %v\n", err)
	}
}

// maxLine bounds one command line on stdin.
const maxLine = 1 << 20

// commands reads msgbench's lines after the scenario. start is closed on
// {"type":"start"}; stop is closed on {"type":"stop"} or when stdin ends
// (closed, or unreadable), which the protocol treats the same.
type commands struct {
	start chan struct{}
	stop  chan struct{}
}

func readCommands(r *bufio.Reader) *commands {
	c := &commands{start: make(chan struct{}), stop: make(chan struct{})}
	go c.loop(r)
	return c
}

func (c *commands) loop(r *bufio.Reader) {
	started := false
	defer close(c.stop)
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			var cmd struct {
				Type string `json:"type"`
			}
			if jerr := json.Unmarshal(line, &cmd); jerr != nil {
				fmt.Fprintf(os.Stderr, "msgbench-driver-go: ignoring a line that is not JSON: %v\n", jerr)
			} else {
				switch cmd.Type {
				case "start":
					if !started {
						started = true
						close(c.start)
					}
				case "stop":
					return
				default:
					fmt.Fprintf(os.Stderr, "msgbench-driver-go: ignoring command %q\n", cmd.Type)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// readLine returns one line without its end of line; a final line without
// one is returned with io.EOF.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		part, isPrefix, err := r.ReadLine()
		buf = append(buf, part...)
		if len(buf) > maxLine {
			return nil, errors.New("line too long")
		}
		if err != nil || !isPrefix {
			return buf, err
		}
	}
}
