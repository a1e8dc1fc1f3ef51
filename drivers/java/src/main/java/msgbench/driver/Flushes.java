package msgbench.driver;

import io.nats.client.Connection;

import java.time.Duration;
import java.util.concurrent.TimeoutException;

/** Round trips that confirm setup (a subscription is in place once the server answered). */
final class Flushes {
    private Flushes() {
    }

    static void confirm(Connection nc, Duration timeout, String what) throws DriverException {
        try {
            nc.flush(timeout);
        } catch (TimeoutException e) {
            throw new DriverException(DriverException.Kind.CONNECT,
                    "the server did not confirm " + what + " within " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverException.Kind.INTERNAL, "interrupted during " + what);
        }
    }
}
