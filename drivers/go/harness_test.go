package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The end-to-end tests run the driver as msgbench does: built into a
// binary, as a child process speaking the protocol over pipes, against a
// nats-server of their own on a free loopback port.

var driverBin string // built by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "msgbench-driver-go-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	driverBin = filepath.Join(dir, "msgbench-driver-go")
	args := []string{"build", "-o", driverBin}
	if os.Getenv("MSGBENCH_DRIVER_RACE") != "" {
		args = append(args, "-race") // the driver itself under the race detector
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building the driver: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// natsServerBin is MSGBENCH_NATS_SERVER, else nats-server on PATH.
func natsServerBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MSGBENCH_NATS_SERVER"); p != "" {
		return p
	}
	p, err := exec.LookPath("nats-server")
	if err != nil {
		t.Fatalf("no nats-server: set MSGBENCH_NATS_SERVER or put nats-server on PATH (%v)", err)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs `nats-server -js -a 127.0.0.1 -p PORT -sd DIR` for the
// test and returns its URL; it is stopped when the test ends.
func startServer(t *testing.T) string {
	t.Helper()
	bin := natsServerBin(t)
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		var logs bytes.Buffer
		cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", t.TempDir())
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		url := fmt.Sprintf("nats://127.0.0.1:%d", port)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Time{} // port taken meanwhile: try another
				continue
			default:
			}
			if nc, err := nats.Connect(url, nats.Timeout(time.Second)); err == nil {
				nc.Close()
				t.Cleanup(func() {
					_ = cmd.Process.Kill()
					<-exited
				})
				return url
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		<-exited
		t.Logf("nats-server on port %d did not come up:\n%s", port, logs.String())
	}
	t.Fatal("could not start nats-server")
	return ""
}

// driver is one running driver process.
type driver struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *lockedBuffer
	exited chan struct{}
	err    error // Wait's, after exited
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startDriver(t *testing.T) *driver {
	t.Helper()
	d := &driver{t: t, lines: make(chan []byte, 1024), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(driverBin)
	d.cmd.Dir = "." // msgbench runs a driver in its folder
	d.cmd.Stderr = d.stderr
	var err error
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			d.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(d.lines)
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("driver stderr:\n%s", d.stderr.String())
		}
	})
	return d
}

func (d *driver) send(v any) {
	d.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.stdin.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("writing to the driver: %v", err)
	}
}

// next returns the driver's next stdout line, validated against the
// protocol schema; ok is false at EOF.
func (d *driver) next(timeout time.Duration) (msg map[string]any, ok bool) {
	d.t.Helper()
	select {
	case line, open := <-d.lines:
		if !open {
			return nil, false
		}
		return validateLine(d.t, line), true
	case <-time.After(timeout):
		d.t.Fatalf("no line from the driver within %v", timeout)
	}
	return nil, false
}

// expect reads the next line and requires its type.
func (d *driver) expect(typ string, timeout time.Duration) map[string]any {
	d.t.Helper()
	msg, ok := d.next(timeout)
	if !ok {
		d.t.Fatalf("driver closed stdout, waiting for %q", typ)
	}
	if msg["type"] != typ {
		d.t.Fatalf("got a %q line, want %q: %v", msg["type"], typ, msg)
	}
	return msg
}

// untilResult reads progress lines until the result line, and returns the
// result object and the progress lines seen.
func (d *driver) untilResult(timeout time.Duration) (map[string]any, int) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	progress := 0
	for {
		msg, ok := d.next(time.Until(deadline))
		if !ok {
			d.t.Fatal("driver closed stdout before its result")
		}
		switch msg["type"] {
		case "progress":
			progress++
		case "result":
			return msg["result"].(map[string]any), progress
		default:
			d.t.Fatalf("unexpected %q line while running: %v", msg["type"], msg)
		}
	}
}

// exitCode waits for the process to end (stdout closed first, with no
// line left) and returns its exit status.
func (d *driver) exitCode(timeout time.Duration) int {
	d.t.Helper()
	if msg, ok := d.next(timeout); ok {
		d.t.Fatalf("a line after the last one expected: %v", msg)
	}
	select {
	case <-d.exited:
	case <-time.After(timeout):
		d.t.Fatalf("driver did not exit within %v", timeout)
	}
	var ee *exec.ExitError
	if errors.As(d.err, &ee) {
		return ee.ExitCode()
	}
	if d.err != nil {
		d.t.Fatalf("driver: %v", d.err)
	}
	return 0
}
