package msgbench.driver;

import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import io.nats.client.Message;
import io.nats.client.MessageHandler;

import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * A pubsub subscriber: its own connection and a {@link Dispatcher} whose handler counts each
 * message and checks its stamp. jnats' reader thread parses messages into the dispatcher's
 * queue and the dispatcher's thread calls the handler, so the handler runs on one thread.
 */
public final class CountingSubscriber implements MessageHandler, Drain.Target {
    private final int id;
    private final Connection nc;
    private final DeliveryLog log;
    private Dispatcher dispatcher;
    private long bytes;
    private long lastNs;
    /** Written last in the handler: reading it makes everything before it visible. */
    private volatile long received;

    public CountingSubscriber(int id, Connection nc, int publishers, boolean stamped) {
        this.id = id;
        this.nc = nc;
        this.log = new DeliveryLog(publishers, stamped);
    }

    /** Subscribes and waits for the server to confirm, before {@code ready}. */
    public void subscribe(String subject, Duration timeout) throws DriverException {
        dispatcher = nc.createDispatcher(this);
        NatsClients.raisePendingLimits(dispatcher);
        dispatcher.subscribe(subject);
        Flushes.confirm(nc, timeout, "subscribe");
    }

    @Override
    public void onMessage(Message msg) {
        long now = System.nanoTime();
        byte[] data = msg.getData();
        log.record(data);
        bytes += data.length;
        lastNs = now;
        received = received + 1;
    }

    /** Stops delivery to the handler; counts are final afterwards. */
    public void stop() {
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

    public DeliveryLog.Seen seen() {
        return new DeliveryLog.Seen(received, log);
    }

    public Report.Client report(long startNs) {
        long n = received;
        return Report.Client.sub(id, n, bytes, n == 0 ? 0 : Math.max(0, lastNs - startNs) / 1e9);
    }
}
