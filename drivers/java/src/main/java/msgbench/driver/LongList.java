package msgbench.driver;

import java.util.Arrays;

/** A growable list of longs (acknowledged stream sequences), without boxing. */
final class LongList {
    private long[] values = new long[1024];
    private int size;

    void add(long v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = v;
    }

    void addAll(LongList other) {
        for (int i = 0; i < other.size; i++) {
            add(other.values[i]);
        }
    }

    int size() {
        return size;
    }

    /** The acknowledged-sequence summary: distinct count, range and repeats. */
    Report.Js summarizeAcks() {
        if (size == 0) {
            return new Report.Js(0, 0, 0, 0);
        }
        long[] sorted = Arrays.copyOf(values, size);
        Arrays.sort(sorted);
        long distinct = 1;
        for (int i = 1; i < sorted.length; i++) {
            if (sorted[i] != sorted[i - 1]) {
                distinct++;
            }
        }
        return new Report.Js(distinct, sorted[0], sorted[sorted.length - 1], size - distinct);
    }
}
