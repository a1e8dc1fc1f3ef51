package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFrameBytes(t *testing.T) {
	got := frame("a.b", []byte("hello"))
	want := "PUB a.b 5\r\nhello\r\n"
	if string(got) != want {
		t.Fatalf("frame = %q, want %q", got, want)
	}
	if got := frame("x", nil); string(got) != "PUB x 0\r\n\r\n" {
		t.Fatalf("empty frame = %q", got)
	}
}

func TestBuildChunkExactBytes(t *testing.T) {
	data := payload(16)
	one := "PUB bench.pub 16\r\n" + string(data) + "\r\n"

	chunk, frameLen := buildChunk("bench.pub", data, 3, 10)
	if frameLen != len(one) {
		t.Fatalf("frameLen = %d, want %d", frameLen, len(one))
	}
	if string(chunk) != strings.Repeat(one, 3) {
		t.Fatalf("chunk for 3 msgs = %q", chunk)
	}

	// More messages than fit: the chunk is capped.
	chunk, _ = buildChunk("bench.pub", data, 25, 10)
	if string(chunk) != strings.Repeat(one, 10) {
		t.Fatalf("capped chunk has %d bytes, want %d", len(chunk), 10*len(one))
	}
}

func TestWritePlanCoversEveryMessage(t *testing.T) {
	for _, tc := range []struct{ msgs, chunk, full, rest int }{
		{25, 10, 2, 5},
		{20, 10, 2, 0},
		{3, 10, 0, 3},
		{2000000, 65536, 30, 33920},
	} {
		full, rest := writePlan(tc.msgs, tc.chunk)
		if full != tc.full || rest != tc.rest || full*tc.chunk+rest != tc.msgs {
			t.Errorf("writePlan(%d, %d) = %d, %d; want %d, %d", tc.msgs, tc.chunk, full, rest, tc.full, tc.rest)
		}
	}
}

func TestChunkMsgsBounded(t *testing.T) {
	if got := chunkMsgs(34); got != maxChunkMsgs {
		t.Errorf("chunkMsgs(34) = %d, want %d", got, maxChunkMsgs)
	}
	if got := chunkMsgs(1 << 20); got*(1<<20) > maxChunkBytes || got < 1 {
		t.Errorf("chunkMsgs(1MiB) = %d, exceeds %d bytes", got, maxChunkBytes)
	}
	if got := chunkMsgs(64 << 20); got != 1 {
		t.Errorf("chunkMsgs(64MiB) = %d, want 1", got)
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4333": "127.0.0.1:4333",
		"127.0.0.1:4333":        "127.0.0.1:4333",
		"nats://localhost":      "localhost:4222",
	} {
		got, err := hostPort(in)
		if err != nil || got != want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := hostPort("tls://127.0.0.1:4222"); err == nil {
		t.Error("hostPort accepted a tls:// URL")
	}
}

// fakeServer speaks just enough of the protocol for rawPublish: it sends
// INFO, expects CONNECT and PING, then counts PUB frames until the final
// PING, checking every frame byte for byte.
func fakeServer(ln net.Listener, subject string, data []byte, result chan<- error, count chan<- int) {
	conn, err := ln.Accept()
	if err != nil {
		result <- err
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	io.WriteString(conn, "INFO {\"server_id\":\"fake\",\"max_payload\":1048576}\r\n")
	line, _ := r.ReadString('\n')
	if !strings.HasPrefix(line, "CONNECT {") {
		result <- fmt.Errorf("expected CONNECT, got %q", line)
		return
	}
	if line, _ = r.ReadString('\n'); line != "PING\r\n" {
		result <- fmt.Errorf("expected PING, got %q", line)
		return
	}
	io.WriteString(conn, "PONG\r\n")

	wantHdr := "PUB " + subject + " " + strconv.Itoa(len(data)) + "\r\n"
	n := 0
	body := make([]byte, len(data)+2)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			result <- err
			return
		}
		if line == "PING\r\n" {
			break
		}
		if line != wantHdr {
			result <- fmt.Errorf("frame %d: header %q, want %q", n, line, wantHdr)
			return
		}
		if _, err := io.ReadFull(r, body); err != nil {
			result <- err
			return
		}
		if !bytes.Equal(body[:len(data)], data) || string(body[len(data):]) != "\r\n" {
			result <- fmt.Errorf("frame %d: bad payload %q", n, body)
			return
		}
		n++
	}
	io.WriteString(conn, "PONG\r\n")
	count <- n
	result <- nil
}

func TestRawPublishSendsExactlyN(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := payload(16)
	// More than one chunk plus a remainder.
	const msgs = maxChunkMsgs*2 + 7
	result := make(chan error, 1)
	count := make(chan int, 1)
	go fakeServer(ln, "t.raw", data, result, count)

	d, err := rawPublish(ln.Addr().String(), "t.raw", data, msgs)
	if err != nil {
		t.Fatalf("rawPublish: %v", err)
	}
	if d <= 0 {
		t.Errorf("duration %v, want > 0", d)
	}
	if err := <-result; err != nil {
		t.Fatalf("fake server: %v", err)
	}
	if got := <-count; got != msgs {
		t.Fatalf("server saw %d frames, want %d", got, msgs)
	}
}
