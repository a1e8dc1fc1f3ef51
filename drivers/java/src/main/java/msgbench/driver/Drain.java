package msgbench.driver;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeoutException;

/** Waits for subscribers to receive what was published, within the scenario's limits. */
final class Drain {
    /** How long the count must stand still, once everything is known to be handed over. */
    private static final long QUIET_NS = 50_000_000;

    /** A subscriber as draining sees it. */
    interface Target {
        long received();

        /** Messages the library holds for the handler, not yet delivered. */
        long pending();

        /** A round trip to the server on the subscriber's connection. */
        void flush(Duration timeout) throws TimeoutException, InterruptedException;
    }

    private Drain() {
    }

    /**
     * Returns when every target received {@code expectedEach}; or when, after a round trip on
     * each subscriber's connection (so everything the server had for it was read) and with
     * nothing pending in the library, the counts stood still briefly; or when no message came
     * for {@code timeout_ms}; or, after a stop, {@code timeout_ms} after it.
     */
    static void await(RunContext ctx, List<? extends Target> targets, long expectedEach)
            throws InterruptedException {
        long timeoutNs = ctx.scenario().timeoutNs();
        long last = -1;
        long lastChange = System.nanoTime();
        boolean flushed = false;
        // Bounded: every iteration ends at the latest timeout_ms after the count last moved.
        while (true) {
            long now = System.nanoTime();
            long total = 0;
            boolean all = true;
            for (Target t : targets) {
                long r = t.received();
                total += r;
                all &= r >= expectedEach;
            }
            if (all) {
                return;
            }
            if (total != last) {
                last = total;
                lastChange = now;
            }
            if (now - lastChange >= timeoutNs || now >= ctx.drainDeadlineNs()) {
                return;
            }
            if (!flushed) {
                for (Target t : targets) {
                    long left = Math.min(timeoutNs, ctx.drainDeadlineNs() - System.nanoTime());
                    try {
                        t.flush(Duration.ofNanos(Math.max(1_000_000, left)));
                    } catch (TimeoutException | RuntimeException e) {
                        System.err.println("msgbench-driver-java: subscriber flush: " + e);
                    }
                }
                flushed = true;
                continue;
            }
            if (now - lastChange >= QUIET_NS && targets.stream().allMatch(t -> t.pending() == 0)) {
                return;
            }
            Thread.sleep(1);
        }
    }
}
