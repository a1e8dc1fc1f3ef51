package msgbench.driver;

import org.HdrHistogram.Histogram;

/**
 * Loads and initializes the driver's own per-message code paths before {@code ready}, so that
 * their one-time costs (class loading, the VarHandle behind {@link Stamp}) do not land on the
 * first measured message. It sends nothing; the library is left exactly as it is.
 */
final class ClassWarmup {
    private ClassWarmup() {
    }

    static void run() {
        byte[] p = Stamp.payload(Stamp.LEN, 1, 0);
        long sink = Stamp.seq(p) + Stamp.publisher(p);
        new DeliveryLog(1, true).record(p);
        Histogram h = Latencies.newHistogram();
        Latencies.record(h, 1_000 + sink);
        SendTimes t = new SendTimes(2);
        t.put(1, System.nanoTime());
        sink += t.get(1) + new Pacer(1).offsetNs(1) + h.getTotalCount();
        if (sink == 42) {
            System.err.print(""); // keeps the work observable
        }
    }
}
