// Command ref is the reference side of the msgbench side-by-side benchmark.
//
// It has nine subcommands, each of which prints exactly one JSON line on
// stdout:
//
//	ref pub     -url URL -msgs N -size S -subject SUBJ
//	ref pubsub  -url URL -msgs N -size S -subject SUBJ
//	ref raw     -url URL -msgs N -size S -subject SUBJ
//	ref latency -url URL -rate R -duration D -warmup W -size S -subject SUBJ
//	ref request -url URL -msgs N -size S -subject SUBJ
//	ref jspub   -url URL -mode sync|async|batch|fast -max-in-flight W -batch B -max-outstanding-acks A -storage memory|file -persist default|async -msgs N -size S -stream NAME -subject SUBJ
//	ref jsconsume -url URL -mode fetch|consume|ordered -batch B -ack explicit|none -msgs N -size S -stream NAME -subject SUBJ -timeout D
//	ref grpc    -addr HOST:PORT -proto FILE -import DIR -call pkg.Service/Method -data JSON -concurrency C -connections K -n N -timeout D
//	ref greeter -addr HOST:PORT
//
// pub and pubsub use the official Go client (nats.go) the way an ordinary
// application would. raw bypasses any client library and writes prebuilt
// PUB frames on a plain TCP connection, which measures how fast the server
// can ingest messages from a single connection. latency measures end-to-end
// latency at a target rate the way nats-io's latency-tests tool does (see
// latency.go); request measures closed-loop request/reply round trips with
// one requester (see request.go). jspub publishes into a JetStream stream
// with nats.go's jetstream package, synchronously, with a window of
// asynchronous publishes, in atomic batches or in one fast batch (see jspub.go); jsconsume
// fills a stream, then consumes it with a pull or ordered consumer (see
// jsconsume.go). grpc is a unary gRPC load generator written with grpc-go
// that behaves like ghz: closed-loop workers sharing connections, a dynamic
// request built from a .proto parsed at run time (see grpc.go). greeter
// serves grpc-go's helloworld Greeter until SIGINT or SIGTERM (see greeter.go).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// waitTimeout bounds every wait: connecting, flushing, waiting for the
// subscriber to make progress, waiting for a PONG.
const waitTimeout = 10 * time.Second

// config holds the common command line options of all subcommands.
type config struct {
	url     string
	msgs    int
	size    int
	subject string
}

// result is the JSON line printed on stdout. The sub_* fields are only
// present for pubsub.
type result struct {
	Mode          string   `json:"mode"`
	Msgs          int      `json:"msgs"`
	Seconds       float64  `json:"seconds"`
	MsgsPerSec    float64  `json:"msgs_per_sec"`
	SubMsgs       *int     `json:"sub_msgs,omitempty"`
	SubSeconds    *float64 `json:"sub_seconds,omitempty"`
	SubMsgsPerSec *float64 `json:"sub_msgs_per_sec,omitempty"`
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ref pub|pubsub|raw|request -url nats://HOST:PORT -msgs N -size S -subject SUBJ")
	fmt.Fprintln(w, "       ref latency -url nats://HOST:PORT -rate R -duration D -warmup W -size S -subject SUBJ")
	fmt.Fprintln(w, "       ref jspub -url nats://HOST:PORT -mode sync|async|batch|fast -max-in-flight W -batch B -max-outstanding-acks A -storage memory|file -persist default|async -msgs N -size S -stream NAME -subject SUBJ")
	fmt.Fprintln(w, "       ref jsconsume -url nats://HOST:PORT -mode fetch|consume|ordered -batch B -ack explicit|none -msgs N -size S -stream NAME -subject SUBJ -timeout D")
	fmt.Fprintln(w, "       ref greeter -addr HOST:PORT")
	fmt.Fprintln(w, "       ref grpc -addr HOST:PORT -proto FILE [-import DIR]... -call pkg.Service/Method -data JSON -concurrency C -connections K -n N -timeout D")
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	mode := os.Args[1]
	if mode == "-h" || mode == "--help" || mode == "help" {
		usage(os.Stdout)
		return
	}
	var res any
	var err error
	switch mode {
	case "latency":
		var lcfg latencyConfig
		if lcfg, err = parseLatencyFlags(os.Args[2:]); err == nil {
			res, err = runLatency(lcfg)
		}
	case "jspub":
		var jcfg jsPubConfig
		if jcfg, err = parseJSPubFlags(os.Args[2:]); err == nil {
			res, err = runJSPub(jcfg)
		}
	case "jsconsume":
		var ccfg jsConsumeConfig
		if ccfg, err = parseJSConsumeFlags(os.Args[2:]); err == nil {
			res, err = runJSConsume(ccfg)
		}
	case "grpc":
		var gcfg grpcConfig
		if gcfg, err = parseGRPCFlags(os.Args[2:]); err == nil {
			res, err = runGRPC(gcfg)
		}
	case "greeter":
		var gcfg greeterConfig
		if gcfg, err = parseGreeterFlags(os.Args[2:]); err == nil {
			res, err = runGreeter(gcfg)
		}
	default:
		var cfg config
		if cfg, err = parseFlags(mode, os.Args[2:]); err == nil {
			switch mode {
			case "pub":
				res, err = runPub(cfg)
			case "pubsub":
				res, err = runPubSub(cfg)
			case "raw":
				res, err = runRaw(cfg)
			case "request":
				res, err = runRequest(cfg)
			}
		}
	}
	var usageErr usageError
	if errors.As(err, &usageErr) {
		fmt.Fprintf(os.Stderr, "ref: %v\n", err)
		usage(os.Stderr)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ref %s: %v\n", mode, err)
		os.Exit(1)
	}
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ref %s: %v\n", mode, err)
		os.Exit(1)
	}
	fmt.Println(string(line))
}

// usageError is a bad command line (exit status 2 and the usage text), as
// opposed to a failed run (exit status 1).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func parseFlags(mode string, args []string) (config, error) {
	cfg, err := parseCommonFlags(mode, args)
	if err != nil {
		return config{}, usageError{err}
	}
	return cfg, nil
}

func parseCommonFlags(mode string, args []string) (config, error) {
	defaultMsgs := 1000000
	switch mode {
	case "pub", "pubsub", "raw":
	case "request":
		defaultMsgs = 20000
	default:
		return config{}, fmt.Errorf("unknown subcommand %q", mode)
	}
	var cfg config
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&cfg.url, "url", "nats://127.0.0.1:4222", "server URL")
	fs.IntVar(&cfg.msgs, "msgs", defaultMsgs, "number of messages (requests) to send")
	fs.IntVar(&cfg.size, "size", 16, "payload size in bytes")
	fs.StringVar(&cfg.subject, "subject", "bench.ref", "subject to publish on")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() != 0 {
		return config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if cfg.msgs <= 0 {
		return config{}, errors.New("-msgs must be > 0")
	}
	if cfg.size < 0 {
		return config{}, errors.New("-size must be >= 0")
	}
	if err := checkSubject(cfg.subject); err != nil {
		return config{}, err
	}
	return cfg, nil
}

func checkSubject(subject string) error {
	if subject == "" || strings.ContainsAny(subject, " \t\r\n") {
		return fmt.Errorf("invalid subject %q", subject)
	}
	return nil
}

func payload(size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// connect opens a nats.go connection that never reconnects (a broken
// connection must show up as an error, not be hidden by the reconnect
// buffer) and reports asynchronous errors such as slow consumers on stderr.
func connect(url, name string) (*nats.Conn, error) {
	return nats.Connect(url,
		nats.Name(name),
		nats.Timeout(waitTimeout),
		nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			fmt.Fprintf(os.Stderr, "ref %s: async error: %v\n", name, err)
		}),
	)
}

// publish sends cfg.msgs messages on nc and waits for the server to have
// processed them all (Flush waits for the PONG). It returns the time from
// the first publish until the flush returned.
func publish(nc *nats.Conn, cfg config) (time.Duration, error) {
	data := payload(cfg.size)
	start := time.Now()
	for i := 0; i < cfg.msgs; i++ {
		if err := nc.Publish(cfg.subject, data); err != nil {
			return 0, fmt.Errorf("publish %d: %w", i, err)
		}
	}
	if err := nc.FlushTimeout(waitTimeout); err != nil {
		return 0, fmt.Errorf("flush: %w", err)
	}
	return time.Since(start), nil
}

func runPub(cfg config) (result, error) {
	nc, err := connect(cfg.url, "ref-pub")
	if err != nil {
		return result{}, fmt.Errorf("connect: %w", err)
	}
	defer nc.Close()
	d, err := publish(nc, cfg)
	if err != nil {
		return result{}, err
	}
	return result{Mode: "pub", Msgs: cfg.msgs, Seconds: d.Seconds(), MsgsPerSec: rate(cfg.msgs, d)}, nil
}

func runPubSub(cfg config) (result, error) {
	// All timestamps are offsets from base so that the subscriber callback
	// and the publisher can share them through atomics.
	base := time.Now()
	var received atomic.Int64
	var lastRecv atomic.Int64 // offset from base of the latest recorded receive
	done := make(chan struct{})
	want := int64(cfg.msgs)

	subConn, err := connect(cfg.url, "ref-sub")
	if err != nil {
		return result{}, fmt.Errorf("connect subscriber: %w", err)
	}
	defer subConn.Close()
	sub, err := subConn.Subscribe(cfg.subject, func(_ *nats.Msg) {
		n := received.Add(1)
		// Reading the clock for every message would add measurable cost
		// to the reference; every 256th message is precise enough (the
		// error is at most 255 message times) and the last one is exact.
		if n&255 == 0 || n == want {
			lastRecv.Store(int64(time.Since(base)))
		}
		if n == want {
			close(done)
		}
	})
	if err != nil {
		return result{}, fmt.Errorf("subscribe: %w", err)
	}
	// Unlimited pending buffers: if messages go missing it is the server
	// dropping a slow consumer, not this tool.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return result{}, fmt.Errorf("set pending limits: %w", err)
	}
	if err := subConn.FlushTimeout(waitTimeout); err != nil {
		return result{}, fmt.Errorf("subscriber flush: %w", err)
	}

	pubConn, err := connect(cfg.url, "ref-pub")
	if err != nil {
		return result{}, fmt.Errorf("connect publisher: %w", err)
	}
	defer pubConn.Close()
	pubStart := time.Since(base)
	pubDur, err := publish(pubConn, cfg)
	if err != nil {
		return result{}, err
	}

	// Wait until everything arrived, or until the subscriber made no
	// progress for waitTimeout.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastCount := received.Load()
	lastProgress := time.Now()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			n := received.Load()
			if n != lastCount {
				lastCount, lastProgress = n, time.Now()
			} else if time.Since(lastProgress) >= waitTimeout {
				fmt.Fprintf(os.Stderr, "ref pubsub: subscriber stalled at %d of %d messages\n", n, want)
				break wait
			}
		}
	}

	got := int(received.Load())
	subDur := time.Duration(lastRecv.Load()) - pubStart
	if got == 0 || subDur < 0 {
		subDur = 0
	}
	subSecs := subDur.Seconds()
	subRate := rate(got, subDur)
	return result{
		Mode:          "pubsub",
		Msgs:          cfg.msgs,
		Seconds:       pubDur.Seconds(),
		MsgsPerSec:    rate(cfg.msgs, pubDur),
		SubMsgs:       &got,
		SubSeconds:    &subSecs,
		SubMsgsPerSec: &subRate,
	}, nil
}
