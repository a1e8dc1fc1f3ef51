package msgbench.driver;

import java.util.concurrent.locks.LockSupport;

/**
 * An open-loop schedule: message {@code n} is due {@code n / rate} seconds after time zero.
 * A sender waits for each due time and never skips one; when it is behind it sends at once.
 */
public record Pacer(double ratePerSec) {
    /** Below this much time left the sender spins instead of parking (parking overshoots). */
    private static final long SPIN_NS = 100_000;
    /** The longest single park, so that a stop request is seen within 10 ms. */
    private static final long MAX_PARK_NS = 10_000_000;

    public Pacer {
        if (!(ratePerSec > 0)) {
            throw new IllegalArgumentException("rate must be > 0");
        }
    }

    /** Nanoseconds after time zero at which message {@code n} is due. */
    public long offsetNs(long n) {
        return (long) (n * 1e9 / ratePerSec);
    }

    /**
     * Waits until {@code dueNs} (a {@link System#nanoTime()} instant). False when the run was
     * stopped meanwhile.
     */
    public static boolean waitUntil(long dueNs, RunContext ctx) {
        // Bounded by dueNs: each iteration either returns or moves closer to it.
        while (true) {
            if (ctx.stopping()) {
                return false;
            }
            long left = dueNs - System.nanoTime();
            if (left <= 0) {
                return true;
            }
            if (left > SPIN_NS) {
                LockSupport.parkNanos(Math.min(left - SPIN_NS, MAX_PARK_NS));
            } else {
                Thread.onSpinWait();
            }
        }
    }
}
