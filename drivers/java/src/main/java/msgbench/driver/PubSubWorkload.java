package msgbench.driver;

import io.nats.client.Connection;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code pubsub}: {@code subs} subscribers (each its own connection and Dispatcher), then
 * {@code pubs} publishers (each its own connection and thread) publishing with the library's
 * buffered {@code publish} and one flush at the end; delivery accounting from the stamps.
 */
public final class PubSubWorkload implements Workload {
    private final RunContext ctx;
    private final NatsClients clients;
    private final List<Publisher> publishers = new ArrayList<>();
    private final List<CountingSubscriber> subscribers = new ArrayList<>();

    public PubSubWorkload(RunContext ctx) {
        this.ctx = ctx;
        this.clients = new NatsClients(ctx);
    }

    @Override
    public void prepare() throws DriverException {
        Scenario sc = ctx.scenario();
        Duration setup = Duration.ofMillis(sc.connectTimeoutMs());
        for (int i = 0; i < sc.subs(); i++) {
            Connection nc = clients.connect("msgbench-java-sub-" + i);
            CountingSubscriber s = new CountingSubscriber(i, nc, sc.pubs(), sc.stamped());
            s.subscribe(sc.subject(), setup);
            subscribers.add(s);
        }
        Pacer pacer = sc.paced() ? new Pacer(sc.rate() / sc.pubs()) : null;
        for (int i = 0; i < sc.pubs(); i++) {
            Connection nc = clients.connect("msgbench-java-pub-" + i);
            publishers.add(new Publisher(i, nc, ctx, pacer));
        }
    }

    @Override
    public String notes() {
        return "Connection.publish (queued for the library's writer thread, default outgoing queue), "
                + "one flush per publisher at the end; subscribers: one Dispatcher each, "
                + "pending limits raised (messages unlimited, bytes 1/4 of the heap)";
    }

    @Override
    public long sent() {
        long n = 0;
        for (Publisher p : publishers) {
            n += p.sent();
        }
        return n;
    }

    @Override
    public long received() {
        long n = 0;
        for (CountingSubscriber s : subscribers) {
            n += s.received();
        }
        return n;
    }

    @Override
    public Report.Result run() throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (Publisher p : publishers) {
            Thread t = new Thread(p, "msgbench-pub-" + p.id());
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        long[] sentPer = publishers.stream().mapToLong(Publisher::sent).toArray();
        long totalSent = sent();
        Drain.await(ctx, subscribers, totalSent);
        ctx.finish();
        subscribers.forEach(CountingSubscriber::stop);

        List<Report.Client> reports = new ArrayList<>();
        for (Publisher p : publishers) {
            reports.add(Report.Client.pub(p.id(), p.sent(), p.sent() * ctx.scenario().size(), p.seconds()));
        }
        List<DeliveryLog.Seen> seen = new ArrayList<>();
        for (CountingSubscriber s : subscribers) {
            reports.add(s.report(ctx.startNs()));
            seen.add(s.seen());
        }
        Report.Delivery delivery = DeliveryLog.summarize(sentPer, seen, ctx.scenario().stamped());
        Map<String, Long> errors = ctx.errors().snapshot(
                Set.of(ErrorCounts.SLOW_CONSUMER, ErrorCounts.DISCONNECTED));
        return new Report.Result(ctx.stopping(), reports, delivery, errors, null, null, null);
    }

    @Override
    public void close() {
        clients.close();
    }
}
