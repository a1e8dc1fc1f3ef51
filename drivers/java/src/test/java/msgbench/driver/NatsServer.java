package msgbench.driver;

import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A {@code nats-server -js} of the test's own on a free loopback port (the binary from
 * MSGBENCH_NATS_SERVER, else nats-server on PATH), with its store in a temporary directory.
 */
final class NatsServer implements AutoCloseable {
    private final Process process;
    private final Path storeDir;
    private final Path log;
    private final int port;

    private NatsServer(Process process, Path storeDir, Path log, int port) {
        this.process = process;
        this.storeDir = storeDir;
        this.log = log;
        this.port = port;
    }

    static NatsServer start() throws Exception {
        String bin = System.getenv("MSGBENCH_NATS_SERVER");
        if (bin == null || bin.isBlank()) {
            bin = "nats-server";
        }
        Path store = Files.createTempDirectory("msgbench-java-nats");
        Path log = store.resolve("server.log");
        int port = freePort();
        Process p = new ProcessBuilder(bin, "-js", "-a", "127.0.0.1", "-p", String.valueOf(port),
                "-sd", store.resolve("js").toString())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        NatsServer s = new NatsServer(p, store, log, port);
        try {
            s.awaitReady(Duration.ofSeconds(10));
        } catch (Exception e) {
            s.close();
            throw e;
        }
        return s;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Until a client connects and JetStream answers. */
    private void awaitReady(Duration limit) throws Exception {
        long deadline = System.nanoTime() + limit.toNanos();
        Exception last = null;
        // Bounded by the deadline.
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("nats-server exited: " + Files.readString(log));
            }
            try (Connection nc = connect()) {
                nc.jetStreamManagement().getAccountStatistics();
                return;
            } catch (Exception e) {
                last = e;
                Thread.sleep(50);
            }
        }
        throw new IllegalStateException("nats-server not ready on port " + port, last);
    }

    String url() {
        return "nats://127.0.0.1:" + port;
    }

    /**
     * The test's own connection. Ten seconds to connect: on a machine kept busy beside the
     * tests (two spin loops on two cores, and this JVM compiling), jnats' handshake with a
     * server already up has taken more than the two seconds this once allowed.
     */
    Connection connect() throws IOException, InterruptedException {
        return Nats.connect(new Options.Builder().server(url())
                .connectionTimeout(Duration.ofSeconds(10)).noReconnect()
                .errorListener(new io.nats.client.ErrorListener() { })
                .build());
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
        }
        try (Stream<Path> s = Files.walk(storeDir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
