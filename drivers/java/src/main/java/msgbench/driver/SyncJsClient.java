package msgbench.driver;

import io.nats.client.JetStream;
import io.nats.client.api.PublishAck;
import org.HdrHistogram.Histogram;

/**
 * A js_pub client in {@code sync} mode: {@link JetStream#publish(String, byte[])} waits for
 * each PubAck before the next publish; each is timed on this client's own thread.
 */
final class SyncJsClient implements TimedClient {
    private final int id;
    private final RunContext ctx;
    private final JetStream js;
    private final Pacer pacer;
    private final LongList acks;
    private final byte[] unstamped;
    private final long warmupNs;
    private final Histogram corrected = Latencies.newHistogram();
    private final Histogram uncorrected = Latencies.newHistogram();
    private volatile long sent;
    private volatile long answered;
    private long firstSendNs;
    private long lastSendNs;
    private long lastAnswerNs;

    SyncJsClient(int id, RunContext ctx, JetStream js, Pacer pacer, LongList acks) {
        this.id = id;
        this.ctx = ctx;
        this.js = js;
        this.pacer = pacer;
        this.acks = acks;
        Scenario sc = ctx.scenario();
        this.unstamped = sc.stamped() ? null : new byte[sc.size()];
        this.warmupNs = sc.warmupMs() * 1_000_000L;
    }

    @Override
    public void run() {
        Scenario sc = ctx.scenario();
        long limit = sc.counted() ? sc.msgs() : Long.MAX_VALUE;
        long t0 = ctx.startNs();
        long end = ctx.endNs();
        // Bounded by the message count, the duration, or a stop request; each publish by
        // the JetStream request timeout (timeout_ms).
        for (long n = 0; n < limit && !ctx.stopping(); n++) {
            long due = -1;
            if (pacer != null) {
                due = t0 + pacer.offsetNs(n);
                if (due >= end || !Pacer.waitUntil(due, ctx)) {
                    return;
                }
            } else if (end != Long.MAX_VALUE && System.nanoTime() >= end) {
                return;
            }
            byte[] payload = unstamped != null ? unstamped : Stamp.payload(sc.size(), n, id);
            long sentNs = System.nanoTime();
            if (n == 0) {
                firstSendNs = sentNs;
            }
            lastSendNs = sentNs;
            sent = n + 1;
            try {
                PublishAck ack = js.publish(sc.subject(), payload);
                long now = System.nanoTime();
                long from = due < 0 ? sentNs : due;
                if (from - t0 >= warmupNs) {
                    Latencies.record(corrected, now - from);
                    Latencies.record(uncorrected, now - sentNs);
                }
                acks.add(ack.getSeqno());
                lastAnswerNs = now;
                answered = answered + 1;
            } catch (Exception e) {
                ctx.errors().add(Failures.kind(e, true));
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    @Override
    public long sent() {
        return sent;
    }

    @Override
    public long answered() {
        return answered;
    }

    @Override
    public Histogram corrected() {
        return corrected.copy();
    }

    @Override
    public Histogram uncorrected() {
        return uncorrected.copy();
    }

    @Override
    public Report.Client pubReport() {
        long n = sent;
        return Report.Client.pub(id, n, n * ctx.scenario().size(),
                n == 0 ? 0 : (lastSendNs - firstSendNs) / 1e9);
    }

    @Override
    public Report.Client subReport() {
        long n = answered;
        return Report.Client.sub(id, n, n * ctx.scenario().size(),
                n == 0 ? 0 : Math.max(0, lastAnswerNs - ctx.startNs()) / 1e9);
    }
}
