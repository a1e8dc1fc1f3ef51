package msgbench.driver;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * When each recent message was actually sent, looked up by sequence number: a ring the
 * publisher fills and the subscriber reads on another thread. A slot holds its sequence next to
 * its time, so a lookup never returns another message's time.
 */
final class SendTimes {
    static final long UNKNOWN = Long.MIN_VALUE;

    private final AtomicLongArray slots;
    private final int capacity;

    SendTimes(int capacity) {
        this.capacity = capacity;
        this.slots = new AtomicLongArray(capacity * 2);
        for (int i = 0; i < capacity; i++) {
            slots.set(2 * i, -1);
        }
    }

    /** A ring that covers four seconds of sends at {@code rate}, within [64 Ki, 4 Mi]. */
    static SendTimes forRate(double rate) {
        long n = (long) Math.min(1 << 22, Math.max(1 << 16, rate * 4));
        return new SendTimes((int) n);
    }

    void put(long seq, long nanos) {
        int i = (int) Long.remainderUnsigned(seq, capacity);
        slots.set(2 * i + 1, nanos);
        slots.set(2 * i, seq);
    }

    long get(long seq) {
        int i = (int) Long.remainderUnsigned(seq, capacity);
        if (slots.get(2 * i) != seq) {
            return UNKNOWN;
        }
        long t = slots.get(2 * i + 1);
        return slots.get(2 * i) == seq ? t : UNKNOWN;
    }
}
