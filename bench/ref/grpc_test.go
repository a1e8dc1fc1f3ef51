package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// testProto is a small service shaped like msgbench's log service.
const testProto = `syntax = "proto3";

package test.log.v1;

service Log {
  rpc Append(AppendRequest) returns (AppendAck);
  rpc Tail(AppendRequest) returns (stream AppendAck);
}

message AppendRequest {
  string stream = 1;
  bytes data = 2;
  map<string, string> metadata = 3;
}

message AppendAck {
  string stream = 1;
  uint64 position = 2;
}
`

const testCall = "test.log.v1.Log/Append"

// testData is a request as the benchmark sends it: a stream name and 128
// bytes of data (base64, as protojson wants bytes).
const testData = `{"stream":"bench","data":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8="}`

// writeProto writes testProto into dir/test/log/v1/log.proto and returns
// its path.
func writeProto(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "test", "log", "v1", "log.proto")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(testProto), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// testServer answers every unary call on any service: calls to Append are
// decoded as AppendRequest (with dynamicpb) and acknowledged with the
// stream's name and a position; everything else is UNIMPLEMENTED. Requests
// that are not what testData describes are counted in bad. With delay,
// every answer waits that long first.
type testServer struct {
	addr     string
	calls    atomic.Int64
	bad      atomic.Int64
	position atomic.Uint64
}

func startTestServer(t *testing.T, md protoreflect.MethodDescriptor, delay time.Duration) *testServer {
	t.Helper()
	ts := &testServer{}
	in, out := md.Input().Fields(), md.Output().Fields()
	handler := func(_ any, stream grpc.ServerStream) error {
		ts.calls.Add(1)
		name, _ := grpc.MethodFromServerStream(stream)
		if name != "/"+testCall {
			return status.Errorf(codes.Unimplemented, "no method %s", name)
		}
		req := dynamicpb.NewMessage(md.Input())
		if err := stream.RecvMsg(req); err != nil {
			return err
		}
		streamName := req.Get(in.ByName("stream")).String()
		if streamName != "bench" || len(req.Get(in.ByName("data")).Bytes()) != 128 {
			ts.bad.Add(1)
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		ack := dynamicpb.NewMessage(md.Output())
		ack.Set(out.ByName("stream"), protoreflect.ValueOfString(streamName))
		ack.Set(out.ByName("position"), protoreflect.ValueOfUint64(ts.position.Add(1)))
		return stream.SendMsg(ack)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(handler))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	ts.addr = lis.Addr().String()
	return ts
}

func TestGRPCRun(t *testing.T) {
	dir := t.TempDir()
	protoFile := writeProto(t, dir)
	md, err := loadMethod(protoFile, []string{dir}, testCall)
	if err != nil {
		t.Fatal(err)
	}
	ts := startTestServer(t, md, 0)
	for _, conns := range []int{1, 3} {
		ts.calls.Store(0)
		res, err := runGRPC(grpcConfig{
			addr:        ts.addr,
			proto:       protoFile,
			imports:     []string{dir},
			call:        testCall,
			data:        testData,
			concurrency: 50,
			connections: conns,
			n:           2000,
			timeout:     20 * time.Second,
		})
		if err != nil {
			t.Fatalf("%d connections: %v", conns, err)
		}
		if res.Mode != "grpc" || res.Requests != 2000 || res.OK != 2000 {
			t.Errorf("%d connections: result %+v, want 2000 requests, all ok", conns, res)
		}
		if len(res.Errors) != 0 {
			t.Errorf("%d connections: errors %v", conns, res.Errors)
		}
		if res.RPS <= 0 || res.Seconds <= 0 {
			t.Errorf("%d connections: rps %v in %v s", conns, res.RPS, res.Seconds)
		}
		if res.P50 <= 0 || res.P50 > res.P99 {
			t.Errorf("%d connections: p50 %d ns, p99 %d ns", conns, res.P50, res.P99)
		}
		if res.CPUSeconds <= 0 {
			t.Errorf("%d connections: cpu_seconds %v", conns, res.CPUSeconds)
		}
		if got := ts.calls.Load(); got != 2000 {
			t.Errorf("%d connections: the server saw %d calls, want 2000", conns, got)
		}
	}
	if bad := ts.bad.Load(); bad != 0 {
		t.Errorf("%d requests did not match -data", bad)
	}
}

func TestGRPCDeadlineExceeded(t *testing.T) {
	dir := t.TempDir()
	protoFile := writeProto(t, dir)
	md, err := loadMethod(protoFile, []string{dir}, testCall)
	if err != nil {
		t.Fatal(err)
	}
	ts := startTestServer(t, md, 200*time.Millisecond)
	res, err := runGRPC(grpcConfig{
		addr: ts.addr, proto: protoFile, imports: []string{dir}, call: testCall, data: testData,
		concurrency: 5, connections: 1, n: 10, timeout: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 0 || res.Errors["DEADLINE_EXCEEDED"] != 10 || len(res.Errors) != 1 {
		t.Errorf("ok %d, errors %v; want 0 and 10 DEADLINE_EXCEEDED", res.OK, res.Errors)
	}
	if res.RPS != 0 {
		t.Errorf("rps %v, want 0 (no call succeeded)", res.RPS)
	}
}

func TestGRPCUnknownMethod(t *testing.T) {
	dir := t.TempDir()
	protoFile := writeProto(t, dir)
	for _, call := range []string{"test.log.v1.Log/Nope", "test.log.v1.Nope/Append"} {
		_, err := runGRPC(grpcConfig{
			addr: "127.0.0.1:1", proto: protoFile, imports: []string{dir}, call: call, data: testData,
			concurrency: 1, connections: 1, n: 1, timeout: time.Second,
		})
		if err == nil || !strings.Contains(err.Error(), "Nope") {
			t.Errorf("-call %s: error %v, want one naming Nope", call, err)
		}
	}
	_, err := loadMethod(protoFile, []string{dir}, "test.log.v1.Log/Tail")
	if err == nil || !strings.Contains(err.Error(), "streaming") {
		t.Errorf("streaming method: error %v, want one saying it streams", err)
	}
	for _, call := range []string{"", "Append", "test.log.v1.Log/", "/Append"} {
		if _, _, err := splitCall(call); err == nil {
			t.Errorf("splitCall(%q) accepted", call)
		}
	}
}

func TestGRPCUnknownField(t *testing.T) {
	dir := t.TempDir()
	protoFile := writeProto(t, dir)
	_, err := runGRPC(grpcConfig{
		addr: "127.0.0.1:1", proto: protoFile, imports: []string{dir}, call: testCall,
		data:        `{"stream":"bench","colour":"blue"}`,
		concurrency: 1, connections: 1, n: 1, timeout: time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("error %v, want one naming the unknown field colour", err)
	}
}

func TestProtoSource(t *testing.T) {
	dir := t.TempDir()
	protoFile := writeProto(t, dir)
	// Relative to an import directory: named as from there.
	name, paths := protoSource(protoFile, []string{filepath.Join(dir, "elsewhere"), dir})
	if name != "test/log/v1/log.proto" || len(paths) != 2 {
		t.Errorf("protoSource = %q, %v", name, paths)
	}
	// Outside every import directory: its base name, its directory added.
	name, paths = protoSource(protoFile, []string{filepath.Join(dir, "elsewhere")})
	if name != "log.proto" || len(paths) != 2 || paths[1] != filepath.Dir(protoFile) {
		t.Errorf("protoSource = %q, %v", name, paths)
	}
	// Both forms compile.
	if _, err := loadMethod(protoFile, nil, testCall); err != nil {
		t.Errorf("without -import: %v", err)
	}
	// A relative path with a relative import directory, as the benchmark
	// passes them (-proto proto/a/b.proto -import proto).
	t.Chdir(dir)
	if _, err := loadMethod("test/log/v1/log.proto", []string{"test"}, testCall); err != nil {
		t.Errorf("relative paths: %v", err)
	}
}

// TestGRPCRepoProto loads msgbench's own service definition, as the
// benchmark does.
func TestGRPCRepoProto(t *testing.T) {
	const file = "../../proto/msgbench/log/v1/log.proto"
	if _, err := os.Stat(file); err != nil {
		// The file is part of this repository; its absence is a broken checkout.
		t.Fatalf("no %s: %v", file, err)
	}
	md, err := loadMethod(file, []string{"../../proto"}, "msgbench.log.v1.Log/Append")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildRequest(md, testData); err != nil {
		t.Fatal(err)
	}
}

func TestGRPCFlags(t *testing.T) {
	cfg, err := parseGRPCArgs([]string{
		"-addr", "127.0.0.1:5", "-proto", "a.proto", "-import", "x:y", "-import", "z",
		"-call", testCall, "-n", "7",
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.imports, ",") != "x,y,z" {
		t.Errorf("imports %v, want x, y, z", cfg.imports)
	}
	if cfg.concurrency != 100 || cfg.connections != 1 || cfg.timeout != 20*time.Second || cfg.n != 7 {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, args := range [][]string{
		{"-proto", "a.proto"},
		{"-call", testCall},
		{"-proto", "a.proto", "-call", testCall, "-n", "0"},
		{"-proto", "a.proto", "-call", testCall, "-concurrency", "2", "-connections", "3"},
		{"-proto", "a.proto", "-call", testCall, "-timeout", "0s"},
	} {
		if _, err := parseGRPCArgs(args); err == nil {
			t.Errorf("parseGRPCArgs(%q) accepted", args)
		}
	}
}

func TestPercentile(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(i + 1)
	}
	if p := percentile(d, 50); p != 50 {
		t.Errorf("p50 = %d, want 50", p)
	}
	if p := percentile(d, 99); p != 99 {
		t.Errorf("p99 = %d, want 99", p)
	}
	if p := percentile(d[:1], 99); p != 1 {
		t.Errorf("p99 of one = %d, want 1", p)
	}
	if p := percentile(nil, 50); p != 0 {
		t.Errorf("p50 of none = %d, want 0", p)
	}
	if codeName(codes.DeadlineExceeded) != "DEADLINE_EXCEEDED" || codeName(codes.Canceled) != "CANCELLED" || codeName(99) != "CODE_99" {
		t.Error("codeName")
	}
}
