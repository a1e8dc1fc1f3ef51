// Command msgbench-driver-go is msgbench's driver for the official Go NATS
// client, nats.go: it runs one scenario of msgbench's driver protocol v1
// (spec/driver-protocol.md) and writes its result.
//
// stdin carries msgbench's commands (scenario, start, stop), stdout only
// the driver's protocol lines, stderr free text.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

const natsModule = "github.com/nats-io/nats.go"

// runner is one scenario kind, connected and ready to start.
type runner interface {
	// notes say where the driver departs from the obvious use of the
	// library, for the ready line.
	notes() string
	// totals are the progress line's sent and received so far.
	totals() (sent, received int64)
	// run sends, drains and builds the result (Interrupted is set by the
	// caller).
	run() (result, error)
	close()
}

func main() {
	os.Exit(drive(os.Stdin, os.Stdout))
}

// drive runs the protocol and returns the exit status.
func drive(stdin io.Reader, stdout io.Writer) int {
	out := newOutput(stdout)
	in := bufio.NewReaderSize(stdin, 64<<10)

	line, err := readLine(in)
	if len(line) == 0 {
		out.fail(errUsage, fmt.Sprintf("no scenario line on stdin (%v)", err))
		return 2
	}
	sc, err := parseScenario(line)
	if err != nil {
		out.fail(failKind(err), err.Error())
		return 2
	}

	ctl := newControl(sc.timeout())
	r, err := setup(sc, ctl)
	if err != nil {
		out.fail(failKind(err), err.Error())
		return 2
	}
	defer r.close()

	if err := out.ready(clientInfo{
		Language: "go",
		Library:  "nats.go",
		Version:  moduleVersion(natsModule),
		Notes:    r.notes(),
	}); err != nil {
		fmt.Fprintf(os.Stderr, "msgbench-driver-go: writing ready: %v\n", err)
		return 1
	}

	cmds := readCommands(in)
	select {
	case <-cmds.start:
	case <-cmds.stop:
		// Stopped (or stdin closed) before start: the run starts halted
		// and reports an empty, interrupted result.
		ctl.interrupt()
	}
	ctl.begin(sc.runLimit())
	go func() {
		<-cmds.stop
		ctl.interrupt()
	}()

	stopProgress := startProgress(out, ctl, r)
	res, err := r.run()
	stopProgress()
	if err != nil {
		out.fail(errInternal, err.Error())
		return 2
	}
	res.Interrupted = ctl.interrupted.Load()
	if err := out.result(res); err != nil {
		fmt.Fprintf(os.Stderr, "msgbench-driver-go: writing result: %v\n", err)
		return 1
	}
	return 0
}

func setup(sc *scenario, ctl *control) (runner, error) {
	switch sc.Kind {
	case "pubsub":
		return setupPubSub(sc, ctl)
	case "latency":
		return setupLatency(sc, ctl)
	case "request":
		return setupRequest(sc, ctl)
	case "js_pub":
		return setupJSPub(sc, ctl)
	}
	return nil, &scenarioError{kind: errUnsupported, msg: fmt.Sprintf("kind %q is not supported", sc.Kind)}
}

func failKind(err error) string {
	var se *scenarioError
	var ce *connectError
	switch {
	case errors.As(err, &se):
		return se.kind
	case errors.As(err, &ce):
		return errConnect
	}
	return errInternal
}

// startProgress writes a progress line every second until the returned
// function is called; that function returns once the ticker goroutine has
// finished, so no progress line can follow the result.
func startProgress(out *output, ctl *control, r runner) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sent, received := r.totals()
				if err := out.progress(float64(ctl.now())/1e9, sent, received); err != nil {
					fmt.Fprintf(os.Stderr, "msgbench-driver-go: writing progress: %v\n", err)
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// moduleVersion is the version of a dependency this binary was built with,
// as Go's module system reports it (for example "v1.55.0").
func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == path {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}
