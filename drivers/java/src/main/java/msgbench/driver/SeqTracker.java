package msgbench.driver;

/**
 * What one subscriber saw of one publisher's sequence numbers, in fixed memory: a sliding
 * bitmap of the last {@link #WINDOW} numbers below the highest one seen tells a duplicate from
 * a late arrival (msgbench's delivery accounting, docs/scenarios.md "Delivery accounting").
 *
 * <p>A number seen twice is a duplicate; one that arrives after a higher one is reordered; one
 * older than the window counts as reordered (and the duplicate count is then a lower bound).
 * Not thread-safe: one subscriber's messages are handled on one thread.
 */
public final class SeqTracker {
    public static final int WINDOW = 8192;
    private static final int WORDS = WINDOW / 64;

    /** One past the highest sequence seen. */
    private long next;
    private final long[] seen = new long[WORDS];
    private long unique;
    private long duplicated;
    private long reordered;
    private long beyondWindow;

    public void record(long seq) {
        if (Long.compareUnsigned(seq, next) >= 0) {
            long gap = seq - next;
            if (Long.compareUnsigned(gap, WINDOW) >= 0) {
                java.util.Arrays.fill(seen, 0L);
            } else {
                // Slots between the old high mark and seq now stand for newer, unseen numbers.
                for (long s = next; s != seq; s++) {
                    clear(s);
                }
            }
            set(seq);
            next = seq + 1;
            unique++;
        } else if (next - seq > WINDOW) {
            beyondWindow++;
            reordered++;
            unique++;
        } else if (isSet(seq)) {
            duplicated++;
        } else {
            set(seq);
            unique++;
            reordered++;
        }
    }

    private static int word(long seq) {
        return (int) ((seq & (WINDOW - 1)) >>> 6);
    }

    private static long mask(long seq) {
        return 1L << (seq & 63);
    }

    private void set(long seq) {
        seen[word(seq)] |= mask(seq);
    }

    private void clear(long seq) {
        seen[word(seq)] &= ~mask(seq);
    }

    private boolean isSet(long seq) {
        return (seen[word(seq)] & mask(seq)) != 0;
    }

    public long unique() {
        return unique;
    }

    public long duplicated() {
        return duplicated;
    }

    public long reordered() {
        return reordered;
    }

    public long beyondWindow() {
        return beyondWindow;
    }

    /** One past the highest sequence seen. */
    public long highMark() {
        return next;
    }
}
