package msgbench.driver;

import java.util.List;

/**
 * Everything one subscriber counts of this run's publishers: a {@link SeqTracker} per
 * publisher for stamped messages, and how many arrived without a usable stamp.
 * Not thread-safe: one subscriber's messages are handled on one thread.
 *
 * <p>The same pieces, by the same names, are in every driver: {@link SeqTracker} (one publisher
 * at one subscriber), {@code DeliveryLog} (one subscriber) and {@link #summarize} (the result's
 * delivery section); each records with {@code record}. spec/vectors/delivery holds the
 * sequences they must all count alike ({@code DeliveryVectorsTest}).
 */
public final class DeliveryLog {
    private final SeqTracker[] trackers;
    private final boolean stamped;
    private long unstamped;
    private long foreign;

    /**
     * @param publishers how many publishers the run has (their indexes are 0..publishers-1)
     * @param stamped    whether payloads carry a stamp (size >= 16)
     */
    public DeliveryLog(int publishers, boolean stamped) {
        this.trackers = new SeqTracker[publishers];
        this.stamped = stamped;
        for (int i = 0; i < publishers; i++) {
            trackers[i] = new SeqTracker();
        }
    }

    /** Records one delivered payload. */
    public void record(byte[] payload) {
        if (!stamped || payload.length < Stamp.LEN) {
            unstamped++;
            return;
        }
        long pub = Stamp.publisher(payload);
        if (pub < 0 || pub >= trackers.length) {
            foreign++;
            return;
        }
        trackers[(int) pub].record(Stamp.seq(payload));
    }

    /** Records a sequence number of publisher 0 (for a run with one publisher). */
    public void recordSeq(int publisher, long seq) {
        trackers[publisher].record(seq);
    }

    public SeqTracker tracker(int publisher) {
        return trackers[publisher];
    }

    public long unstamped() {
        return unstamped;
    }

    public long foreign() {
        return foreign;
    }

    /** What one subscriber received in total, next to its log. */
    public record Seen(long received, DeliveryLog log) {
    }

    /**
     * The result's delivery section from what each publisher sent and what each subscriber saw
     * (msgbench's rules: each subscriber expects every message; lost = what each publisher sent
     * minus the distinct numbers each subscriber saw of it; without stamps, counts only).
     */
    public static Report.Delivery summarize(long[] sentPerPublisher, List<Seen> subs, boolean stamped) {
        long totalSent = 0;
        for (long s : sentPerPublisher) {
            totalSent += s;
        }
        long received = 0;
        boolean exact = stamped;
        for (Seen s : subs) {
            received += s.received();
            if (s.log().unstamped > 0 || s.log().foreign > 0 || !s.log().stamped) {
                exact = false;
            }
        }
        if (!exact) {
            long lost = 0;
            for (Seen s : subs) {
                lost += Math.max(0, totalSent - s.received());
            }
            return new Report.Delivery(totalSent, received, lost, null, null, "count");
        }
        long lost = 0;
        long duplicated = 0;
        long reordered = 0;
        for (Seen s : subs) {
            for (int p = 0; p < sentPerPublisher.length; p++) {
                SeqTracker t = s.log().tracker(p);
                lost += Math.max(0, sentPerPublisher[p] - t.unique());
                duplicated += t.duplicated();
                reordered += t.reordered();
            }
        }
        return new Report.Delivery(totalSent, received, lost, duplicated, reordered, "exact");
    }
}
