package msgbench.driver;

import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.Consumer;
import io.nats.client.ErrorListener;
import io.nats.client.Nats;
import io.nats.client.Options;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;

/**
 * Connections for one run: jnats {@link Options} with the library's defaults except where a
 * scenario field says otherwise, listeners that count errors by msgbench's kinds, and closing
 * everything at the end.
 */
public final class NatsClients implements AutoCloseable {
    /** How much longer than {@code connect_timeout_ms} a timed-out handshake may be retried. */
    private static final long RETRY_BUDGET_NS = 5_000_000_000L;

    private final RunContext ctx;
    private final List<Connection> connections = new ArrayList<>();

    public NatsClients(RunContext ctx) {
        this.ctx = ctx;
    }

    /** Connects with the run's options; fails with a {@code connect} error. */
    public Connection connect(String name) throws DriverException {
        return connect(name, UnaryOperator.identity());
    }

    /**
     * Connects with the library's default options except the server, a name, the connect
     * timeout ({@code connect_timeout_ms}) and listeners that count errors; {@code customize}
     * may add more. A refused connection fails at once. A handshake that times out is tried
     * again while {@code connect_timeout_ms} + 5 s have not passed (msgbench waits 10 s more
     * than that for {@code ready}): a cold JVM on a busy machine can spend most of a short
     * timeout loading the library's classes during its first handshake.
     */
    public Connection connect(String name, UnaryOperator<Options.Builder> customize) throws DriverException {
        Scenario sc = ctx.scenario();
        long budgetEnd = System.nanoTime() + sc.connectTimeoutMs() * 1_000_000L + RETRY_BUDGET_NS;
        // Bounded by the retry budget.
        for (int attempt = 1; ; attempt++) {
            Listener listener = new Listener(name);
            Options o;
            try {
                o = customize.apply(new Options.Builder()
                        .server(sc.server())
                        .connectionName(name)
                        .connectionTimeout(Duration.ofMillis(sc.connectTimeoutMs()))
                        .errorListener(listener)
                        .connectionListener(listener)).build();
            } catch (IllegalArgumentException | IllegalStateException e) {
                throw DriverException.usage("server " + sc.server() + ": " + e.getMessage());
            }
            try {
                Connection nc = Nats.connect(o);
                synchronized (connections) {
                    connections.add(nc);
                }
                return nc;
            } catch (IOException e) {
                Exception why = listener.lastException;
                boolean timedOut = why instanceof TimeoutException;
                if (!timedOut || System.nanoTime() + sc.connectTimeoutMs() * 1_000_000L > budgetEnd) {
                    throw new DriverException(DriverException.Kind.CONNECT, "cannot connect to "
                            + sc.server() + ": " + e.getMessage() + (why == null ? "" : " (" + why + ")"), e);
                }
                System.err.println("msgbench-driver-java: " + name + ": handshake timed out (attempt "
                        + attempt + "), trying again");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DriverException(DriverException.Kind.CONNECT, "interrupted while connecting", e);
            } catch (RuntimeException e) {
                throw new DriverException(DriverException.Kind.CONNECT,
                        "cannot connect to " + sc.server() + ": " + e, e);
            }
        }
    }

    /**
     * Pending limits for a subscriber: messages unlimited, bytes a quarter of the heap. The
     * library's defaults (512 Ki messages, 64 MiB) would let a fast publisher on the same
     * machine push a perfectly healthy subscriber into the client-side slow-consumer drop.
     */
    public static void raisePendingLimits(Consumer consumer) {
        long bytes = Math.max(64L << 20, Runtime.getRuntime().maxMemory() / 4);
        consumer.setPendingLimits(0, bytes);
    }

    @Override
    public void close() {
        List<Connection> all;
        synchronized (connections) {
            all = new ArrayList<>(connections);
            connections.clear();
        }
        for (Connection nc : all) {
            try {
                nc.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                System.err.println("msgbench-driver-java: closing: " + e);
            }
        }
    }

    /** Counts what the library reports while the run is measured; logs everything to stderr. */
    private final class Listener implements ErrorListener, ConnectionListener {
        private final String name;
        /** The last exception the library reported (during connect: why it failed). */
        private volatile Exception lastException;

        Listener(String name) {
            this.name = name;
        }

        private void log(String what) {
            System.err.println("msgbench-driver-java: " + name + ": " + what);
        }

        @Override
        public void slowConsumerDetected(Connection conn, Consumer consumer) {
            log("slow consumer: the library is dropping messages");
            if (ctx.running()) {
                ctx.errors().add(ErrorCounts.SLOW_CONSUMER);
            }
        }

        @Override
        public void errorOccurred(Connection conn, String error) {
            log("server error: " + error);
            if (ctx.running()) {
                ctx.errors().add(ErrorCounts.OTHER);
            }
        }

        @Override
        public void exceptionOccurred(Connection conn, Exception exp) {
            lastException = exp;
            log("exception: " + exp);
        }

        @Override
        @Deprecated
        public void connectionEvent(Connection conn, Events type) {
            connectionEvent(conn, type, null, null);
        }

        @Override
        public void connectionEvent(Connection conn, Events type, Long time, String uriDetails) {
            if (type == Events.DISCONNECTED || type == Events.RECONNECTED || type == Events.CLOSED) {
                log(type.getEvent());
            }
            if (type == Events.DISCONNECTED && ctx.running()) {
                ctx.errors().add(ErrorCounts.DISCONNECTED);
            }
        }
    }
}
