package msgbench.driver;

import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import io.nats.client.Message;
import io.nats.client.MessageHandler;
import org.HdrHistogram.Histogram;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * {@code latency}: one publisher at {@code rate}, open loop (message n is due n/rate seconds
 * after time zero and is sent then, or at once when late, never skipped), one subscriber on its
 * own connection with a Dispatcher. Per message, on one monotonic clock
 * ({@link System#nanoTime()}): corrected = receive - due, uncorrected = receive - actual send.
 */
public final class LatencyWorkload implements Workload {
    private final RunContext ctx;
    private final NatsClients clients;
    private final Pacer pacer;
    private final SendTimes sendTimes;
    private Connection pubConn;
    private Receiver receiver;
    private volatile long sent;
    private long firstNs;
    private long lastNs;

    public LatencyWorkload(RunContext ctx) {
        this.ctx = ctx;
        this.clients = new NatsClients(ctx);
        this.pacer = new Pacer(ctx.scenario().rate());
        this.sendTimes = SendTimes.forRate(ctx.scenario().rate());
    }

    @Override
    public void prepare() throws DriverException {
        Scenario sc = ctx.scenario();
        if (sc.pubs() != 1 || sc.subs() != 1) {
            System.err.println("msgbench-driver-java: latency runs 1 publisher and 1 subscriber;"
                    + " pubs/subs are ignored");
        }
        Connection subConn = clients.connect("msgbench-java-latency-sub");
        receiver = new Receiver(subConn);
        receiver.subscribe(sc.subject(), Duration.ofMillis(sc.connectTimeoutMs()));
        pubConn = clients.connect("msgbench-java-latency-pub");
    }

    @Override
    public String notes() {
        return "Connection.publish per due message (the library's writer thread sends it at once),"
                + " one Dispatcher on a second connection; send times from System.nanoTime()";
    }

    @Override
    public long sent() {
        return sent;
    }

    @Override
    public long received() {
        return receiver.received();
    }

    @Override
    public Report.Result run() throws InterruptedException {
        Scenario sc = ctx.scenario();
        long limit = sc.counted() ? sc.msgs() : Long.MAX_VALUE;
        long t0 = ctx.startNs();
        long end = ctx.endNs();
        // Bounded by the message count, the duration, or a stop request.
        for (long n = 0; n < limit && !ctx.stopping(); n++) {
            long due = t0 + pacer.offsetNs(n);
            if (due >= end || !Pacer.waitUntil(due, ctx)) {
                break;
            }
            byte[] payload = Stamp.payload(sc.size(), n, 0);
            long now = System.nanoTime();
            sendTimes.put(n, now);
            if (n == 0) {
                firstNs = now;
            }
            if (!Publishing.publish(pubConn, sc.subject(), payload, ctx)) {
                break;
            }
            lastNs = now;
            sent = n + 1;
        }
        long total = sent;
        if (total > 0) {
            try {
                pubConn.flush(Duration.ofNanos(Math.max(1_000_000,
                        Math.min(sc.timeoutNs(), ctx.drainDeadlineNs() - System.nanoTime()))));
            } catch (TimeoutException | RuntimeException e) {
                System.err.println("msgbench-driver-java: latency publisher flush: " + e);
            }
        }
        Drain.await(ctx, List.of(receiver), total);
        ctx.finish();
        receiver.stop();

        List<Report.Client> reports = List.of(
                Report.Client.pub(0, total, total * sc.size(), total == 0 ? 0 : (lastNs - firstNs) / 1e9),
                receiver.report(t0));
        Report.Delivery delivery = DeliveryLog.summarize(new long[] {total}, List.of(receiver.seen()), true);
        Map<String, Long> errors = ctx.errors().snapshot(
                Set.of(ErrorCounts.SLOW_CONSUMER, ErrorCounts.DISCONNECTED));
        return new Report.Result(ctx.stopping(), reports, delivery, errors,
                Latencies.report(receiver.corrected), Latencies.report(receiver.uncorrected), null);
    }

    @Override
    public void close() {
        clients.close();
    }

    /** The subscriber: times each message against its due time and its send time. */
    private final class Receiver implements MessageHandler, Drain.Target {
        private final Connection nc;
        private final DeliveryLog log = new DeliveryLog(1, true);
        private final Histogram corrected = Latencies.newHistogram();
        private final Histogram uncorrected = Latencies.newHistogram();
        private final long warmupNs = ctx.scenario().warmupMs() * 1_000_000L;
        private Dispatcher dispatcher;
        private long bytes;
        private long lastNs;
        private volatile long received;

        Receiver(Connection nc) {
            this.nc = nc;
        }

        void subscribe(String subject, Duration timeout) throws DriverException {
            dispatcher = nc.createDispatcher(this);
            NatsClients.raisePendingLimits(dispatcher);
            dispatcher.subscribe(subject);
            Flushes.confirm(nc, timeout, "subscribe");
        }

        @Override
        public void onMessage(Message msg) {
            long now = System.nanoTime();
            byte[] data = msg.getData();
            if (data.length >= Stamp.SEQ_LEN) {
                long seq = Stamp.seq(data);
                log.recordSeq(0, seq);
                long offset = pacer.offsetNs(seq);
                if (offset >= warmupNs) {
                    Latencies.record(corrected, now - (ctx.startNs() + offset));
                    long sentAt = sendTimes.get(seq);
                    if (sentAt != SendTimes.UNKNOWN) {
                        Latencies.record(uncorrected, now - sentAt);
                    }
                }
            }
            bytes += data.length;
            lastNs = now;
            received = received + 1;
        }

        void stop() {
            try {
                nc.closeDispatcher(dispatcher);
            } catch (RuntimeException e) {
                System.err.println("msgbench-driver-java: closing dispatcher: " + e);
            }
        }

        @Override
        public long received() {
            return received;
        }

        @Override
        public long pending() {
            return dispatcher.getPendingMessageCount();
        }

        @Override
        public void flush(Duration timeout) throws TimeoutException, InterruptedException {
            nc.flush(timeout);
        }

        DeliveryLog.Seen seen() {
            return new DeliveryLog.Seen(received, log);
        }

        Report.Client report(long startNs) {
            long n = received;
            return Report.Client.sub(0, n, bytes, n == 0 ? 0 : Math.max(0, lastNs - startNs) / 1e9);
        }
    }
}
