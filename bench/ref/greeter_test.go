package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The Greeter answers SayHello as grpc-go's example does, counts the call, and offers
// reflection (msgbench can find the service without the .proto).
func TestGreeterSayHelloAndReflection(t *testing.T) {
	s, lis, calls, _, err := startGreeter("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	fd, err := greeterFile()
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Services().ByName("Greeter").Methods().ByName("SayHello")
	req := dynamicpb.NewMessage(md.Input())
	req.Set(md.Input().Fields().ByName("name"), protoreflect.ValueOfString("world"))
	reply := dynamicpb.NewMessage(md.Output())
	if err := conn.Invoke(ctx, "/helloworld.Greeter/SayHello", req, reply); err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(md.Output().Fields().ByName("message")).String(); got != "Hello world" {
		t.Fatalf("reply %q, want %q", got, "Hello world")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("calls %d, want 1", n)
	}

	stream, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	found := false
	for _, n := range names {
		found = found || n == "helloworld.Greeter"
	}
	if !found {
		t.Fatalf("reflection lists %v, not helloworld.Greeter", names)
	}
}
