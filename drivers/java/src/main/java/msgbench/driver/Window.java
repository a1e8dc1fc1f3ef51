package msgbench.driver;

import java.util.ArrayDeque;

/**
 * The requests (or async publishes) one client has outstanding: at most {@code limit}; a
 * request without an answer {@code timeout} after it was sent is counted as timed out and
 * frees its slot. A late answer to it is then ignored.
 */
final class Window {
    /** The longest single wait, so that a stop request is seen within 10 ms. */
    private static final long MAX_WAIT_NS = 10_000_000;

    /** One request: its sequence, when it was due and sent, and whether it is settled. */
    static final class Slot {
        final long seq;
        final long dueNs;
        final long sentNs;
        private boolean done;

        Slot(long seq, long dueNs, long sentNs) {
            this.seq = seq;
            this.dueNs = dueNs;
            this.sentNs = sentNs;
        }
    }

    private final int limit;
    private final long timeoutNs;
    /** Slots in send order; settled ones leave once they reach the front. */
    private final ArrayDeque<Slot> order = new ArrayDeque<>();
    private int outstanding;
    private long timeouts;

    Window(int limit, long timeoutNs) {
        this.limit = Math.max(1, limit);
        this.timeoutNs = timeoutNs;
    }

    /**
     * Waits for a free slot and takes it for request {@code seq}, marked as sent now; null when
     * the run was stopped first. {@code dueNs} is the scheduled time, or the send time when the
     * loop is closed ({@code dueNs} &lt; 0).
     */
    synchronized Slot acquire(long seq, long dueNs, RunContext ctx) throws InterruptedException {
        // Bounded: the oldest outstanding request expires within timeout_ms.
        while (true) {
            long now = System.nanoTime();
            expire(now);
            if (outstanding < limit) {
                Slot s = new Slot(seq, dueNs < 0 ? now : dueNs, now);
                order.addLast(s);
                outstanding++;
                return s;
            }
            if (ctx.stopping()) {
                return null;
            }
            waitNanos(Math.min(MAX_WAIT_NS, order.peekFirst().sentNs + timeoutNs - now));
        }
    }

    /** Takes back a slot whose request could not be sent at all. */
    synchronized void abandon(Slot s) {
        if (!s.done) {
            s.done = true;
            outstanding--;
            notifyAll();
        }
    }

    /** Settles a slot on an answer; false when it had already timed out. */
    synchronized boolean complete(Slot s) {
        if (s.done) {
            return false;
        }
        s.done = true;
        outstanding--;
        notifyAll();
        return true;
    }

    /** Waits until nothing is outstanding (answers or timeouts), or until {@code deadlineNs}. */
    synchronized void awaitEmpty(long deadlineNs) throws InterruptedException {
        // Bounded: every outstanding request expires within timeout_ms, and by the deadline.
        while (true) {
            long now = System.nanoTime();
            expire(now);
            if (outstanding == 0 || now >= deadlineNs) {
                return;
            }
            long next = order.isEmpty() ? MAX_WAIT_NS : order.peekFirst().sentNs + timeoutNs - now;
            waitNanos(Math.min(Math.min(MAX_WAIT_NS, next), deadlineNs - now));
        }
    }

    private void expire(long now) {
        // Bounded by the deque's length.
        while (!order.isEmpty()) {
            Slot s = order.peekFirst();
            if (!s.done) {
                if (now - s.sentNs < timeoutNs) {
                    return;
                }
                s.done = true;
                outstanding--;
                timeouts++;
            }
            order.pollFirst();
        }
    }

    private void waitNanos(long nanos) throws InterruptedException {
        long n = Math.max(1, nanos);
        wait(n / 1_000_000, (int) (n % 1_000_000));
    }

    synchronized int outstanding() {
        return outstanding;
    }

    /** Requests this window timed out itself. */
    synchronized long timeouts() {
        return timeouts;
    }
}
