package msgbench.driver;

import org.HdrHistogram.Histogram;

/** A client that times each answer (a reply, a PubAck) to what it sent. */
interface TimedClient extends Runnable {
    long sent();

    long answered();

    /** Latency from the due time (the send time when unpaced). A copy, safe to merge. */
    Histogram corrected();

    /** Latency from the actual send time. A copy, safe to merge. */
    Histogram uncorrected();

    Report.Client pubReport();

    Report.Client subReport();

    /** Merges every client's histograms of one sort. */
    static Histogram merge(Iterable<? extends TimedClient> clients, boolean fromDue) {
        Histogram h = Latencies.newHistogram();
        for (TimedClient c : clients) {
            h.add(fromDue ? c.corrected() : c.uncorrected());
        }
        return h;
    }

    /** Runs each client on its own thread and waits for all of them. */
    static void runAll(java.util.List<? extends TimedClient> clients, String prefix)
            throws InterruptedException {
        java.util.List<Thread> threads = new java.util.ArrayList<>();
        for (int i = 0; i < clients.size(); i++) {
            Thread t = new Thread(clients.get(i), prefix + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
    }
}
