package msgbench.driver;

import io.nats.client.Connection;

import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * A pubsub publisher: {@link Connection#publish(String, byte[])} in a loop, as fast as the
 * library takes messages (or on an open-loop schedule when the scenario has a rate), then one
 * {@link Connection#flush(Duration)}. jnats queues each publish for its writer thread, which
 * batches them into socket writes; when that queue is full (5,000 messages by default)
 * publish blocks until there is room, which is the library's own back-pressure.
 */
public final class Publisher implements Runnable {
    private final int id;
    private final Connection nc;
    private final RunContext ctx;
    private final Pacer pacer;
    private final byte[] unstamped;
    private volatile long sent;
    private long firstNs;
    private long lastNs;

    /**
     * @param pacer this publisher's own schedule (its share of the scenario's rate), or null
     */
    public Publisher(int id, Connection nc, RunContext ctx, Pacer pacer) {
        this.id = id;
        this.nc = nc;
        this.ctx = ctx;
        this.pacer = pacer;
        int size = ctx.scenario().size();
        this.unstamped = ctx.scenario().stamped() ? null : new byte[size];
    }

    @Override
    public void run() {
        Scenario sc = ctx.scenario();
        long limit = sc.counted() ? sc.msgs() : Long.MAX_VALUE;
        long t0 = ctx.startNs();
        long end = ctx.endNs();
        long n = 0;
        // Bounded by the message count, the duration, or a stop request.
        for (; n < limit && !ctx.stopping(); n++) {
            if (pacer != null) {
                long due = t0 + pacer.offsetNs(n);
                if (due >= end || !Pacer.waitUntil(due, ctx)) {
                    break;
                }
            } else if (end != Long.MAX_VALUE && System.nanoTime() >= end) {
                break;
            }
            byte[] payload = unstamped != null ? unstamped : Stamp.payload(sc.size(), n, id);
            if (n == 0) {
                firstNs = System.nanoTime();
            }
            if (!Publishing.publish(nc, sc.subject(), payload, ctx)) {
                break;
            }
            sent = n + 1;
        }
        if (n > 0) {
            flush();
            lastNs = System.nanoTime();
        }
    }

    private void flush() {
        long left = Math.min(ctx.scenario().timeoutNs(), ctx.drainDeadlineNs() - System.nanoTime());
        try {
            nc.flush(Duration.ofNanos(Math.max(1_000_000, left)));
        } catch (TimeoutException e) {
            System.err.println("msgbench-driver-java: publisher " + id + ": flush timed out");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            System.err.println("msgbench-driver-java: publisher " + id + ": flush: " + e);
        }
    }

    public int id() {
        return id;
    }

    public long sent() {
        return sent;
    }

    /** First send to the end of the final flush, in seconds (call after {@link #run}). */
    public double seconds() {
        return sent == 0 ? 0 : (lastNs - firstNs) / 1e9;
    }
}
