package main

// ref greeter: grpc-go's helloworld Greeter, the server run_grpc_ceiling.py loads.
//
// The Go module proxy does not serve grpc-go's examples module, so the service is
// built here: helloworld.proto (embedded) is compiled at start with protocompile, and
// SayHello answers "Hello " + name with dynamic messages through grpc-go's own server,
// codec and HTTP/2 transport, as the example's generated code does. Server reflection
// is registered too. It serves until SIGINT or SIGTERM, then prints its JSON line.

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

//go:embed helloworld.proto
var helloworldProto string

type greeterConfig struct {
	addr string
}

type greeterResult struct {
	Mode  string `json:"mode"`
	Addr  string `json:"addr"`
	Calls int64  `json:"calls"`
}

func parseGreeterFlags(args []string) (greeterConfig, error) {
	var cfg greeterConfig
	fs := flag.NewFlagSet("greeter", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:50051", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return cfg, usageError{err}
	}
	if fs.NArg() > 0 {
		return cfg, usageError{fmt.Errorf("greeter: unexpected argument %q", fs.Arg(0))}
	}
	return cfg, nil
}

// greeterFile compiles the embedded helloworld.proto.
func greeterFile() (protoreflect.FileDescriptor, error) {
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{"helloworld.proto": helloworldProto}),
		}),
	}
	files, err := compiler.Compile(context.Background(), "helloworld.proto")
	if err != nil {
		return nil, fmt.Errorf("compile helloworld.proto: %w", err)
	}
	return files[0], nil
}

// greeterService is the Greeter's service description with a SayHello that counts its calls.
func greeterService(fd protoreflect.FileDescriptor, calls *atomic.Int64) grpc.ServiceDesc {
	md := fd.Services().ByName("Greeter").Methods().ByName("SayHello")
	in, out := md.Input(), md.Output()
	name, message := in.Fields().ByName("name"), out.Fields().ByName("message")
	handler := func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		req := dynamicpb.NewMessage(in)
		if err := dec(req); err != nil {
			return nil, err
		}
		calls.Add(1)
		reply := dynamicpb.NewMessage(out)
		reply.Set(message, protoreflect.ValueOfString("Hello "+req.Get(name).String()))
		return reply, nil
	}
	return grpc.ServiceDesc{
		ServiceName: "helloworld.Greeter",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "SayHello", Handler: handler}},
		Metadata:    "helloworld.proto",
	}
}

// startGreeter listens on addr and serves the Greeter (and reflection) in the background.
func startGreeter(addr string) (*grpc.Server, net.Listener, *atomic.Int64, <-chan error, error) {
	fd, err := greeterFile()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	// Reflection finds the file in the global registry (registered once per process).
	if _, err := protoregistry.GlobalFiles.FindFileByPath(fd.Path()); err != nil {
		if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("register helloworld.proto: %w", err)
		}
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	calls := new(atomic.Int64)
	s := grpc.NewServer()
	desc := greeterService(fd, calls)
	s.RegisterService(&desc, struct{}{})
	reflection.Register(s)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	return s, lis, calls, served, nil
}

func runGreeter(cfg greeterConfig) (greeterResult, error) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	s, lis, calls, served, err := startGreeter(cfg.addr)
	if err != nil {
		return greeterResult{}, err
	}
	select {
	case <-sigs:
		s.Stop()
		<-served
	case err := <-served:
		return greeterResult{}, err
	}
	return greeterResult{Mode: "greeter", Addr: lis.Addr().String(), Calls: calls.Load()}, nil
}
