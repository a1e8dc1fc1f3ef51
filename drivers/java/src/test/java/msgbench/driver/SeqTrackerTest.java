package msgbench.driver;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The same cases as msgbench's own delivery accounting (msgbench/src/stats/delivery.rs). */
class SeqTrackerTest {
    private static final long W = SeqTracker.WINDOW;

    private static long[] counts(SeqTracker t) {
        return new long[] {t.unique(), t.duplicated(), t.reordered()};
    }

    @Test
    void inOrderStreamIsClean() {
        SeqTracker t = new SeqTracker();
        for (long s = 0; s < 100_000; s++) {
            t.record(s);
        }
        assertEquals(List.of(100_000L, 0L, 0L), List.of(t.unique(), t.duplicated(), t.reordered()));
        assertEquals(100_000, t.highMark());
    }

    @Test
    void countsGapsDuplicatesAndLateArrivals() {
        SeqTracker t = new SeqTracker();
        for (long s : new long[] {0, 1, 2, 5, 5, 3, 2, 7}) {
            t.record(s);
        }
        // Seen: 0 1 2 3 5 7 -> 6 unique; 5 and 2 again -> 2 duplicates; 3 late -> 1 reordered.
        assertEquals(List.of(6L, 2L, 1L), List.of(t.unique(), t.duplicated(), t.reordered()));
        // 4 was never seen: a late 4 is reordered, not duplicated.
        t.record(4);
        assertEquals(List.of(7L, 2L, 2L), List.of(t.unique(), t.duplicated(), t.reordered()));
    }

    @Test
    void windowSlotsAreReusedCorrectlyAfterJumps() {
        SeqTracker t = new SeqTracker();
        t.record(3);
        t.record(3 + 2 * W); // jump of more than a window: the slot of 3 is now unseen
        t.record(3 + W + 1); // inside the window below the high mark, never seen
        assertEquals(List.of(3L, 0L, 1L), List.of(t.unique(), t.duplicated(), t.reordered()));

        t = new SeqTracker();
        t.record(10);
        t.record(10 + W - 1);
        t.record(10 + W + 5); // clears exactly the skipped slots, the slot of 10 among them
        t.record(10 + W); // unseen, late
        assertEquals(0, t.duplicated());
        assertEquals(1, t.reordered());
        t.record(10 + W - 1); // seen before, still inside the window
        assertEquals(1, t.duplicated());
        t.record(5); // older than the window
        assertEquals(1, t.beyondWindow());
        assertEquals(2, t.reordered());
        assertEquals(3, counts(t).length);
    }
}
