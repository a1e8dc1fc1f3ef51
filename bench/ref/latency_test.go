package main

import (
	"bufio"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSendTimeRoundTrip(t *testing.T) {
	p := payload(16)
	tail := string(p[8:])
	for _, ns := range []int64{0, 1, 1763750000123456789, math.MaxInt64, -1, math.MinInt64} {
		putSendTime(p, ns)
		got, ok := sendTime(p)
		if !ok || got != ns {
			t.Errorf("round trip of %d = %d, %v", ns, got, ok)
		}
		if string(p[8:]) != tail {
			t.Fatalf("putSendTime wrote past the first 8 bytes: %q", p)
		}
	}
	// Little-endian: the lowest byte comes first.
	putSendTime(p, 0x0102030405060708)
	if p[0] != 0x08 || p[7] != 0x01 {
		t.Errorf("not little-endian: % x", p[:8])
	}
	if _, ok := sendTime(p[:7]); ok {
		t.Error("sendTime accepted a 7-byte payload")
	}
}

func TestPacerSteersTowardTarget(t *testing.T) {
	p := newPacer(1000)
	if p.delay != time.Millisecond {
		t.Fatalf("initial delay %v, want 1ms", p.delay)
	}
	// Ahead of the target (2000 msgs/s so far): sleep 5% longer.
	if got := p.next(2000, time.Second); got != 1050*time.Microsecond {
		t.Errorf("ahead: delay %v, want 1.05ms", got)
	}
	// Behind (500 msgs/s): 5% shorter.
	if got := p.next(500, time.Second); got != 1050*time.Microsecond-52500*time.Nanosecond {
		t.Errorf("behind: delay %v", got)
	}
	// On target: unchanged.
	before := p.delay
	if got := p.next(1000, time.Second); got != before {
		t.Errorf("on target: delay %v, want %v", got, before)
	}
	// Far behind for long: the delay reaches 0 and stays there.
	for i := 0; i < 1000; i++ {
		p.next(1, time.Second)
	}
	if p.delay != 0 {
		t.Errorf("delay %v after falling behind, want 0", p.delay)
	}
	// From 0 it still grows when ahead (by at least 1 ns).
	if got := p.next(1e6, time.Second); got != 1 {
		t.Errorf("from 0: delay %v, want 1ns", got)
	}
}

func TestLatencyRecorderSkipsWarmup(t *testing.T) {
	r := newLatencyRecorder()
	msg := payload(8)
	// Before the publisher set the warm-up end, nothing is recorded.
	putSendTime(msg, 100)
	r.record(msg, 200)
	r.warmupEnd.Store(1000)
	putSendTime(msg, 999) // warm-up
	r.record(msg, 5000)
	putSendTime(msg, 1000)
	r.record(msg, 1000+1234)
	putSendTime(msg, 2000)
	r.record(msg, 1500) // clock went backwards
	r.record(msg[:4], 3000)
	if got := r.received.Load(); got != 5 {
		t.Errorf("received %d, want 5", got)
	}
	if r.hist.TotalCount() != 1 || r.hist.Max() != 1234 {
		t.Errorf("histogram count %d max %d, want one value of 1234", r.hist.TotalCount(), r.hist.Max())
	}
	if r.outOfRange != 1 || r.unstamped != 1 {
		t.Errorf("outOfRange %d unstamped %d, want 1 and 1", r.outOfRange, r.unstamped)
	}
}

func TestParseLatencyArgs(t *testing.T) {
	cfg, err := parseLatencyArgs([]string{"-rate", "100000", "-duration", "3s", "-size", "4096"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.rate != 100000 || cfg.duration != 3*time.Second || cfg.warmup != time.Second || cfg.size != 4096 {
		t.Errorf("parsed %+v", cfg)
	}
	for _, args := range [][]string{
		{"-size", "7"},
		{"-rate", "0"},
		{"-duration", "1s", "-warmup", "1s"},
		{"-warmup", "-1s"},
		{"-subject", "a b"},
		{"extra"},
	} {
		if _, err := parseLatencyArgs(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// pinnedServer is resolved once, from the package directory go test starts
// in, so a test that changes directory still finds it.
var pinnedServer, _ = filepath.Abs(filepath.Join("..", "..", ".tools", "bin", "nats-server"))

// natsServer finds the nats-server binary: $NATS_SERVER, else the pinned one
// the checkout installs (make nats-server puts it in .tools/bin at the
// repository's root, two levels above this package), else one on PATH. None
// is a failure, not a skip: a suite that quietly tests less is worse than a
// red one.
func natsServer(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("NATS_SERVER"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("NATS_SERVER=%s: %v", bin, err)
		}
		return bin
	}
	if _, err := os.Stat(pinnedServer); err == nil {
		return pinnedServer
	}
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Fatalf("no nats-server: not in NATS_SERVER, %s or PATH "+
			"(bash scripts/install-nats-server.sh installs the pinned one)", pinnedServer)
	}
	return bin
}

// startServer starts a nats-server on a free port of 127.0.0.1, with any
// extra arguments, and returns its URL.
func startServer(t *testing.T, extra ...string) string {
	t.Helper()
	bin := natsServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(port)}, extra...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "INFO ") {
				return "nats://" + addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("nats-server did not start")
	return ""
}

func TestLatencyAgainstServer(t *testing.T) {
	url := startServer(t)
	res, err := runLatency(latencyConfig{
		url: url, rate: 2000, duration: 600 * time.Millisecond, warmup: 200 * time.Millisecond,
		size: 64, subject: "t.lat",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 0 || res.Sent < 100 {
		t.Errorf("sent %d lost %d", res.Sent, res.Lost)
	}
	// Only the messages after the warm-up (about 2/3 of them) are recorded.
	if res.Count <= 0 || res.Count >= res.Sent {
		t.Errorf("recorded %d of %d", res.Count, res.Sent)
	}
	if !(0 < res.P50 && res.P50 <= res.P90 && res.P90 <= res.P99 && res.P99 <= res.P999 && res.P999 <= res.Max) {
		t.Errorf("percentiles out of order: %+v", res)
	}
	if res.ActualRate <= 0 {
		t.Errorf("actual rate %v", res.ActualRate)
	}
}

func TestRequestAgainstServer(t *testing.T) {
	url := startServer(t)
	res, err := runRequest(config{url: url, msgs: 300, size: 16, subject: "t.req"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 300 || res.Timeouts != 0 {
		t.Errorf("count %d timeouts %d, want 300 and 0", res.Count, res.Timeouts)
	}
	if !(0 < res.P50 && res.P50 <= res.P99) || res.ReqPerSec <= 0 {
		t.Errorf("bad result %+v", res)
	}
}
