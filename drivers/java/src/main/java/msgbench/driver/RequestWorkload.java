package msgbench.driver;

import io.nats.client.Connection;
import io.nats.client.Message;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code request}: {@code pubs} clients, each on its own connection, send requests with
 * {@link Connection#requestWithTimeout(String, byte[], Duration)} and keep up to
 * {@code in_flight} outstanding (closed loop), or send them on a schedule (open loop, when the
 * scenario has a rate). msgbench runs the responders.
 */
public final class RequestWorkload implements Workload {
    private final RunContext ctx;
    private final NatsClients natsClients;
    private final List<AsyncClient<Message>> clients = new ArrayList<>();

    public RequestWorkload(RunContext ctx) {
        this.ctx = ctx;
        this.natsClients = new NatsClients(ctx);
    }

    @Override
    public void prepare() throws DriverException {
        Scenario sc = ctx.scenario();
        Duration timeout = Duration.ofMillis(sc.timeoutMs());
        Pacer pacer = sc.paced() ? new Pacer(sc.rate() / sc.pubs()) : null;
        for (int i = 0; i < sc.pubs(); i++) {
            Connection nc = natsClients.connect("msgbench-java-req-" + i, b -> b
                    // A no-responders status fails the future with its status instead of a bare
                    // cancellation, and the library's own timeouts raise TimeoutException.
                    .reportNoResponders()
                    .useTimeoutException()
                    .requestCleanupInterval(timeout));
            warmUp(nc);
            clients.add(new AsyncClient<>(i, ctx, pacer,
                    p -> nc.requestWithTimeout(sc.subject(), p, timeout),
                    m -> m.getData().length,
                    m -> { },
                    false));
        }
    }

    /**
     * The library creates its reply-inbox subscription and dispatcher on the first request:
     * one request to a subject nobody serves (answered at once with no responders) does that
     * before {@code ready}.
     */
    private void warmUp(Connection nc) throws DriverException {
        long ms = ctx.scenario().connectTimeoutMs();
        try {
            nc.requestWithTimeout(nc.createInbox(), new byte[0], Duration.ofMillis(ms))
                    .get(ms, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // expected: no responders (or nothing at all)
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverException.Kind.INTERNAL, "interrupted during setup");
        }
    }

    @Override
    public String notes() {
        return "Connection.requestWithTimeout futures, in_flight outstanding per client "
                + "(options: reportNoResponders, useTimeoutException, requestCleanupInterval = "
                + "timeout_ms; the library flushes each request, its default)";
    }

    @Override
    public long sent() {
        return clients.stream().mapToLong(AsyncClient::sent).sum();
    }

    @Override
    public long received() {
        return clients.stream().mapToLong(AsyncClient::answered).sum();
    }

    @Override
    public Report.Result run() throws InterruptedException {
        TimedClient.runAll(clients, "msgbench-req-");
        ctx.finish();
        long timeouts = clients.stream().mapToLong(AsyncClient::timeouts).sum();
        ctx.errors().add(ErrorCounts.REQUEST_TIMEOUT, timeouts);

        List<Report.Client> reports = new ArrayList<>();
        clients.forEach(c -> reports.add(c.pubReport()));
        clients.forEach(c -> reports.add(c.subReport()));
        long sent = sent();
        long ok = received();
        Report.Delivery delivery = new Report.Delivery(sent, ok, Math.max(0, sent - ok),
                clients.stream().mapToLong(AsyncClient::duplicated).sum(),
                clients.stream().mapToLong(AsyncClient::reordered).sum(),
                "exact");
        Map<String, Long> errors = ctx.errors().snapshot(Set.of(ErrorCounts.REQUEST_TIMEOUT,
                ErrorCounts.NO_RESPONDERS, ErrorCounts.SLOW_CONSUMER, ErrorCounts.DISCONNECTED));
        boolean openLoop = ctx.scenario().paced();
        return new Report.Result(ctx.stopping(), reports, delivery, errors,
                Latencies.report(TimedClient.merge(clients, true)),
                // Closed loop has no schedule: the round trip is the only latency there is.
                openLoop ? Latencies.report(TimedClient.merge(clients, false)) : null,
                null);
    }

    @Override
    public void close() {
        natsClients.close();
    }
}
