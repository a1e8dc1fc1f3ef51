package msgbench.driver;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamOptions;
import io.nats.client.api.PublishAck;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code js_pub}: {@code pubs} clients publish into the stream msgbench created. {@code sync}:
 * {@link JetStream#publish(String, byte[])}, one PubAck awaited at a time; {@code async}:
 * {@link JetStream#publishAsync(String, byte[])} with at most {@code in_flight} outstanding.
 * Every PubAck is timed from its publish; acknowledged sequences are reported.
 */
public final class JsPubWorkload implements Workload {
    private final RunContext ctx;
    private final NatsClients natsClients;
    private final List<TimedClient> clients = new ArrayList<>();
    private final List<LongList> acks = new ArrayList<>();

    public JsPubWorkload(RunContext ctx) {
        this.ctx = ctx;
        this.natsClients = new NatsClients(ctx);
    }

    @Override
    public void prepare() throws DriverException {
        Scenario sc = ctx.scenario();
        Duration timeout = Duration.ofMillis(sc.timeoutMs());
        JetStreamOptions jso = JetStreamOptions.builder().requestTimeout(timeout).build();
        Pacer pacer = sc.paced() ? new Pacer(sc.rate() / sc.pubs()) : null;
        for (int i = 0; i < sc.pubs(); i++) {
            Connection nc = natsClients.connect("msgbench-java-js-" + i, b -> b
                    // Failed acks say why (timeout, no responders, ...) instead of a bare
                    // "Timeout or no response"; the async futures' own timeout is the
                    // request cleanup interval, set to timeout_ms.
                    .advancedRequestBehavior()
                    .requestCleanupInterval(timeout));
            checkStream(nc, sc.js().stream());
            JetStream js;
            try {
                js = nc.jetStream(jso);
            } catch (IOException e) {
                throw new DriverException(DriverException.Kind.CONNECT, "no JetStream context: " + e.getMessage(), e);
            }
            LongList seqs = new LongList();
            acks.add(seqs);
            if (sc.js().async()) {
                clients.add(new AsyncClient<PublishAck>(i, ctx, pacer,
                        p -> js.publishAsync(sc.subject(), p),
                        a -> sc.size(),
                        a -> seqs.add(a.getSeqno()),
                        true));
            } else {
                clients.add(new SyncJsClient(i, ctx, js, pacer, seqs));
            }
        }
    }

    /**
     * The stream must exist before {@code ready}; looking it up is also the connection's first
     * request, which sets up the library's reply inbox outside the measurement.
     */
    private void checkStream(Connection nc, String stream) throws DriverException {
        try {
            nc.jetStreamManagement().getStreamInfo(stream);
        } catch (JetStreamApiException e) {
            throw DriverException.usage("stream " + stream + " is not there: " + e.getMessage());
        } catch (IOException e) {
            throw new DriverException(DriverException.Kind.CONNECT,
                    "JetStream is not available: " + e.getMessage(), e);
        }
    }

    @Override
    public String notes() {
        return ctx.scenario().js().async()
                ? "JetStream.publishAsync futures, in_flight outstanding per client (options: "
                        + "advancedRequestBehavior, requestCleanupInterval = timeout_ms)"
                : "JetStream.publish, each PubAck awaited (JetStreamOptions.requestTimeout = "
                        + "timeout_ms; option advancedRequestBehavior)";
    }

    @Override
    public long sent() {
        return clients.stream().mapToLong(TimedClient::sent).sum();
    }

    @Override
    public long received() {
        return clients.stream().mapToLong(TimedClient::answered).sum();
    }

    @Override
    public Report.Result run() throws InterruptedException {
        TimedClient.runAll(clients, "msgbench-js-");
        ctx.finish();
        for (TimedClient c : clients) {
            if (c instanceof AsyncClient<?> a) {
                ctx.errors().add(ErrorCounts.REQUEST_TIMEOUT, a.timeouts());
            }
        }
        List<Report.Client> reports = new ArrayList<>();
        clients.forEach(c -> reports.add(c.pubReport()));
        clients.forEach(c -> reports.add(c.subReport()));
        LongList all = new LongList();
        // The async clients' lists are written under their windows; all answers are in.
        acks.forEach(all::addAll);
        Map<String, Long> errors = ctx.errors().snapshot(Set.of(ErrorCounts.REQUEST_TIMEOUT,
                ErrorCounts.NO_RESPONDERS, ErrorCounts.JS_OTHER, ErrorCounts.DISCONNECTED));
        return new Report.Result(ctx.stopping(), reports, Report.Delivery.none(sent()), errors,
                Latencies.report(TimedClient.merge(clients, true)),
                ctx.scenario().paced() ? Latencies.report(TimedClient.merge(clients, false)) : null,
                all.summarizeAcks());
    }

    @Override
    public void close() {
        natsClients.close();
    }
}
