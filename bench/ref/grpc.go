package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The grpc subcommand is a unary gRPC load generator that behaves like ghz
// (https://ghz.sh), itself written with grpc-go, so that it can stand in for
// it next to `msgbench grpc`:
//
//   - the .proto file is parsed at run time (protocompile, no protoc), and
//     the request is a dynamic message (dynamicpb) built from the -data JSON
//     once, as ghz does when the data is not a template; every call gets a
//     fresh dynamic response message of the method's output type;
//   - -concurrency workers run closed loop: each takes the next request
//     number from a shared counter until -n have been issued, and calls
//     conn.Invoke with a per-call -timeout deadline;
//   - the workers share -connections client connections round robin
//     (worker i uses connection i mod K), plaintext HTTP/2 (h2c);
//   - every call's duration is kept in memory, and the percentiles are
//     computed at the end by sorting them.
//
// The clock runs from the moment the workers start until the last call
// returns; the connections are established before that. CPU time is this
// process's user + system time (getrusage) over the same span.

type grpcConfig struct {
	addr        string
	proto       string
	imports     []string
	call        string
	data        string
	concurrency int
	connections int
	n           int
	timeout     time.Duration
}

type grpcResult struct {
	Mode     string `json:"mode"`
	Requests int    `json:"requests"`
	OK       int    `json:"ok"`
	// Errors counts the failed calls by status code (canonical names, as
	// in DEADLINE_EXCEEDED); empty when every call succeeded.
	Errors  map[string]int `json:"errors"`
	Seconds float64        `json:"seconds"`
	// RPS is OK / Seconds: successful calls per second.
	RPS float64 `json:"rps"`
	// P50 and P99 are over the successful calls (all calls when none
	// succeeded), as ghz's latency distribution is.
	P50        int64   `json:"p50_ns"`
	P99        int64   `json:"p99_ns"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

// importList is the repeatable -import flag; each value may also hold
// several directories separated by the path list separator (":").
type importList []string

func (l *importList) String() string { return strings.Join(*l, string(os.PathListSeparator)) }

func (l *importList) Set(v string) error {
	for _, dir := range filepath.SplitList(v) {
		if dir != "" {
			*l = append(*l, dir)
		}
	}
	return nil
}

func parseGRPCFlags(args []string) (grpcConfig, error) {
	cfg, err := parseGRPCArgs(args)
	if err != nil {
		return grpcConfig{}, usageError{err}
	}
	return cfg, nil
}

func parseGRPCArgs(args []string) (grpcConfig, error) {
	var cfg grpcConfig
	var imports importList
	fs := flag.NewFlagSet("grpc", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:50051", "server HOST:PORT (plaintext HTTP/2)")
	fs.StringVar(&cfg.proto, "proto", "", "the .proto file that defines the service")
	fs.Var(&imports, "import", "import directory for -proto (repeatable, or several separated by ':')")
	fs.StringVar(&cfg.call, "call", "", "the unary method to call: pkg.Service/Method")
	fs.StringVar(&cfg.data, "data", "{}", "the request as JSON (protojson)")
	fs.IntVar(&cfg.concurrency, "concurrency", 100, "workers, each with one call in flight")
	fs.IntVar(&cfg.connections, "connections", 1, "client connections, shared by the workers round robin")
	fs.IntVar(&cfg.n, "n", 200000, "total number of requests")
	fs.DurationVar(&cfg.timeout, "timeout", 20*time.Second, "deadline of every call")
	if err := fs.Parse(args); err != nil {
		return grpcConfig{}, err
	}
	cfg.imports = imports
	if fs.NArg() != 0 {
		return grpcConfig{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch {
	case cfg.addr == "":
		return grpcConfig{}, errors.New("-addr is required")
	case cfg.proto == "":
		return grpcConfig{}, errors.New("-proto is required")
	case cfg.call == "":
		return grpcConfig{}, errors.New("-call is required")
	case cfg.concurrency < 1:
		return grpcConfig{}, errors.New("-concurrency must be >= 1")
	case cfg.connections < 1:
		return grpcConfig{}, errors.New("-connections must be >= 1")
	case cfg.connections > cfg.concurrency:
		return grpcConfig{}, errors.New("-connections must not exceed -concurrency")
	case cfg.n < 1:
		return grpcConfig{}, errors.New("-n must be >= 1")
	case cfg.timeout <= 0:
		return grpcConfig{}, errors.New("-timeout must be > 0")
	}
	return cfg, nil
}

// splitCall splits "pkg.Service/Method" (or "pkg.Service.Method", which ghz
// accepts too) into the service's full name and the method's name.
func splitCall(call string) (protoreflect.FullName, protoreflect.Name, error) {
	i := strings.LastIndexByte(call, '/')
	if i < 0 {
		i = strings.LastIndexByte(call, '.')
	}
	if i <= 0 || i == len(call)-1 {
		return "", "", fmt.Errorf("-call %q: want pkg.Service/Method", call)
	}
	svc, method := protoreflect.FullName(call[:i]), protoreflect.Name(call[i+1:])
	if !svc.IsValid() || !method.IsValid() {
		return "", "", fmt.Errorf("-call %q: want pkg.Service/Method", call)
	}
	return svc, method, nil
}

// protoSource returns the name to compile file under and the import paths
// to resolve it with. A file inside one of the import directories is named
// relative to it (so that `-proto proto/a/b.proto -import proto` compiles
// "a/b.proto"); any other file is named by its base name and its own
// directory is added to the import paths, as ghz does.
func protoSource(file string, imports []string) (string, []string) {
	for _, dir := range imports {
		rel, err := filepath.Rel(dir, file)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			continue
		}
		return filepath.ToSlash(rel), imports
	}
	paths := append(slices.Clone(imports), filepath.Dir(file))
	return filepath.Base(file), paths
}

// loadMethod compiles the .proto file and finds the unary method named by
// call in it (or in the files it imports).
func loadMethod(file string, imports []string, call string) (protoreflect.MethodDescriptor, error) {
	svcName, methodName, err := splitCall(call)
	if err != nil {
		return nil, err
	}
	name, paths := protoSource(file, imports)
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: paths}),
	}
	files, err := compiler.Compile(context.Background(), name)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", file, err)
	}
	d, err := files.AsResolver().FindDescriptorByName(svcName)
	if err != nil {
		return nil, fmt.Errorf("-call %s: service %s not found in %s", call, svcName, file)
	}
	svc, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("-call %s: %s is not a service", call, svcName)
	}
	md := svc.Methods().ByName(methodName)
	if md == nil {
		return nil, fmt.Errorf("-call %s: service %s has no method %s", call, svcName, methodName)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Errorf("-call %s: a streaming method; only unary methods are supported", call)
	}
	return md, nil
}

// buildRequest builds the request message from its JSON; unknown fields are
// an error.
func buildRequest(md protoreflect.MethodDescriptor, data string) (*dynamicpb.Message, error) {
	req := dynamicpb.NewMessage(md.Input())
	if err := protojson.Unmarshal([]byte(data), req); err != nil {
		return nil, fmt.Errorf("-data for %s: %w", md.Input().FullName(), err)
	}
	return req, nil
}

// dialAll opens k plaintext client connections to addr and waits until each
// is ready, so that the load phase does not include connecting.
func dialAll(addr string, k int) ([]*grpc.ClientConn, error) {
	conns := make([]*grpc.ClientConn, 0, k)
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for range k {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("connect %s: %w", addr, err)
		}
		conns = append(conns, conn)
		conn.Connect()
		for {
			s := conn.GetState()
			if s == connectivity.Ready {
				break
			}
			if !conn.WaitForStateChange(ctx, s) {
				closeAll()
				return nil, fmt.Errorf("connect %s: not ready within %v (state %v)", addr, waitTimeout, s)
			}
		}
	}
	return conns, nil
}

// cpuTime is the user + system CPU time this process has used so far.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func runGRPC(cfg grpcConfig) (grpcResult, error) {
	md, err := loadMethod(cfg.proto, cfg.imports, cfg.call)
	if err != nil {
		return grpcResult{}, err
	}
	req, err := buildRequest(md, cfg.data)
	if err != nil {
		return grpcResult{}, err
	}
	fullMethod := "/" + string(md.Parent().FullName()) + "/" + string(md.Name())
	output := md.Output()

	conns, err := dialAll(cfg.addr, cfg.connections)
	if err != nil {
		return grpcResult{}, err
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()

	durations := make([]time.Duration, cfg.n)
	results := make([]codes.Code, cfg.n)
	var firstErrMu sync.Mutex
	firstErr := map[codes.Code]string{}
	var next atomic.Int64
	total := int64(cfg.n)
	workers := min(cfg.concurrency, cfg.n)

	cpu0, err := cpuTime()
	if err != nil {
		return grpcResult{}, fmt.Errorf("getrusage: %w", err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		conn := conns[w%len(conns)]
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				resp := dynamicpb.NewMessage(output)
				ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
				t0 := time.Now()
				err := conn.Invoke(ctx, fullMethod, req, resp)
				durations[i] = time.Since(t0)
				cancel()
				if err != nil {
					code := status.Code(err)
					results[i] = code
					firstErrMu.Lock()
					if _, seen := firstErr[code]; !seen {
						firstErr[code] = err.Error()
					}
					firstErrMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := cpuTime()
	if err != nil {
		return grpcResult{}, fmt.Errorf("getrusage: %w", err)
	}

	res := grpcResult{
		Mode:       "grpc",
		Requests:   cfg.n,
		Errors:     map[string]int{},
		Seconds:    elapsed.Seconds(),
		CPUSeconds: (cpu1 - cpu0).Seconds(),
	}
	okDurations := make([]time.Duration, 0, cfg.n)
	for i, code := range results {
		if code == codes.OK {
			okDurations = append(okDurations, durations[i])
		} else {
			res.Errors[codeName(code)]++
		}
	}
	res.OK = len(okDurations)
	res.RPS = rate(res.OK, elapsed)
	lat := okDurations
	if len(lat) == 0 {
		lat = durations
	}
	slices.Sort(lat)
	res.P50 = int64(percentile(lat, 50))
	res.P99 = int64(percentile(lat, 99))
	for code, msg := range firstErr {
		fmt.Fprintf(os.Stderr, "ref grpc: %d calls failed with %s, the first: %s\n", res.Errors[codeName(code)], codeName(code), msg)
	}
	return res, nil
}

// percentile is the nearest-rank p-th percentile of sorted (0 if empty).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// codeNames are the canonical names of the gRPC status codes, as in the
// gRPC specification (grpc-go's Code.String spells them in camel case).
var codeNames = [...]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

func codeName(c codes.Code) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}
