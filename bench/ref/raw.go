package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The prebuilt buffer used by raw holds at most maxChunkMsgs PUB frames and
// (unless a single frame is larger) at most maxChunkBytes; it is built once
// and written repeatedly, so memory stays bounded whatever the count.
//
// The buffer is handed to the kernel in slices of writeSize bytes: on
// loopback, multi-megabyte writes make the server read slower (measured
// about 25% fewer msgs/s at 128 B than with 64-256 KiB writes), and the raw
// writer should show what the server can take, not a kernel artefact.
const (
	maxChunkMsgs  = 64 * 1024
	maxChunkBytes = 16 << 20
	writeSize     = 256 << 10
)

// chunkMsgs returns how many frames of frameLen bytes go in one chunk.
func chunkMsgs(frameLen int) int {
	return max(1, min(maxChunkMsgs, maxChunkBytes/frameLen))
}

// frame returns one complete PUB frame: "PUB subject size\r\n<payload>\r\n".
func frame(subject string, data []byte) []byte {
	f := make([]byte, 0, len(subject)+len(data)+32)
	f = append(f, "PUB "...)
	f = append(f, subject...)
	f = append(f, ' ')
	f = strconv.AppendInt(f, int64(len(data)), 10)
	f = append(f, "\r\n"...)
	f = append(f, data...)
	f = append(f, "\r\n"...)
	return f
}

// buildChunk returns a buffer holding min(msgs, maxChunk) identical PUB
// frames back to back, and the length of one frame.
func buildChunk(subject string, data []byte, msgs, maxChunk int) ([]byte, int) {
	f := frame(subject, data)
	n := min(msgs, maxChunk)
	buf := make([]byte, 0, n*len(f))
	for i := 0; i < n; i++ {
		buf = append(buf, f...)
	}
	return buf, len(f)
}

// writePlan splits msgs messages into full chunks of chunkMsgs messages
// and a remainder (the remainder is written as a prefix of the chunk).
func writePlan(msgs, chunkMsgs int) (full, rest int) {
	return msgs / chunkMsgs, msgs % chunkMsgs
}

// hostPort turns "nats://host:port" (or a bare "host:port") into a dial
// address.
func hostPort(raw string) (string, error) {
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "nats" {
		return "", fmt.Errorf("unsupported scheme %q (only plain nats:// is supported)", u.Scheme)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", fmt.Errorf("no host in %q", raw)
	}
	if port == "" {
		port = "4222"
	}
	return net.JoinHostPort(host, port), nil
}

// readUntilPong reads protocol lines until PONG, answering server PINGs.
// Any -ERR is returned as an error. The caller sets the read deadline.
func readUntilPong(r *bufio.Reader, w io.Writer) error {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "PONG":
			return nil
		case line == "PING":
			if _, err := io.WriteString(w, "PONG\r\n"); err != nil {
				return err
			}
		case strings.HasPrefix(line, "-ERR"):
			return fmt.Errorf("server error: %s", line)
		}
		// +OK, INFO updates and anything else are ignored.
	}
}

// writeSliced writes buf in slices of at most writeSize bytes. Each call
// gets its own deadline: the run is bounded by the message count, and a
// stuck server by the timeout.
func writeSliced(conn net.Conn, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	if err := conn.SetWriteDeadline(time.Now().Add(waitTimeout)); err != nil {
		return err
	}
	for off := 0; off < len(buf); off += writeSize {
		if _, err := conn.Write(buf[off:min(off+writeSize, len(buf))]); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return nil
}

// rawPublish connects to addr without any client library, performs the
// handshake, then writes msgs prebuilt PUB frames followed by a PING and
// waits for the PONG. It returns the time from the first write to the PONG.
func rawPublish(addr string, subject string, data []byte, msgs int) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		if err := tc.SetNoDelay(true); err != nil {
			return 0, err
		}
	}
	r := bufio.NewReaderSize(conn, 32*1024)

	// Handshake: INFO from the server, then CONNECT + PING, wait for PONG.
	if err := conn.SetDeadline(time.Now().Add(waitTimeout)); err != nil {
		return 0, err
	}
	info, err := r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("read INFO: %w", err)
	}
	if !strings.HasPrefix(info, "INFO ") {
		return 0, fmt.Errorf("expected INFO, got %q", strings.TrimSpace(info))
	}
	if _, err := io.WriteString(conn, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n"); err != nil {
		return 0, fmt.Errorf("write CONNECT: %w", err)
	}
	if err := readUntilPong(r, conn); err != nil {
		return 0, fmt.Errorf("handshake: %w", err)
	}

	// Build everything before the clock starts.
	chunk, frameLen := buildChunk(subject, data, msgs, chunkMsgs(len(frame(subject, data))))
	full, rest := writePlan(msgs, len(chunk)/frameLen)
	tail := chunk[:rest*frameLen]

	start := time.Now()
	for i := 0; i < full; i++ {
		if err := writeSliced(conn, chunk); err != nil {
			return 0, err
		}
	}
	if err := writeSliced(conn, tail); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return 0, fmt.Errorf("write PING: %w", err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
		return 0, err
	}
	if err := readUntilPong(r, conn); err != nil {
		return 0, fmt.Errorf("waiting for PONG: %w", err)
	}
	return time.Since(start), nil
}

func runRaw(cfg config) (result, error) {
	addr, err := hostPort(cfg.url)
	if err != nil {
		return result{}, err
	}
	d, err := rawPublish(addr, cfg.subject, payload(cfg.size), cfg.msgs)
	if err != nil {
		return result{}, err
	}
	return result{Mode: "raw", Msgs: cfg.msgs, Seconds: d.Seconds(), MsgsPerSec: rate(cfg.msgs, d)}, nil
}
