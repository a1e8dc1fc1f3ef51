package msgbench.driver;

import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamStatusException;
import io.nats.client.RequestFailureException;

import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeoutException;

/** Maps what jnats throws for a failed request or publish to msgbench's error kinds. */
final class Failures {
    private static final int MAX_CAUSES = 16;

    private Failures() {
    }

    /**
     * @param jetStream whether unknown failures count as {@code js_other} (js_pub) rather than
     *                  {@code other}
     */
    static String kind(Throwable failure, boolean jetStream) {
        Throwable t = failure;
        for (int depth = 0; t != null && depth < MAX_CAUSES; depth++, t = t.getCause()) {
            if (t instanceof RequestFailureException rfe && rfe.getReason() != null) {
                switch (rfe.getReason()) {
                    case TIMEOUT:
                        return ErrorCounts.REQUEST_TIMEOUT;
                    case NO_RESPONDERS:
                        return ErrorCounts.NO_RESPONDERS;
                    default:
                        break;
                }
            }
            if (t instanceof JetStreamStatusException jse && jse.getStatus() != null
                    && jse.getStatus().getCode() == 503) {
                return ErrorCounts.NO_RESPONDERS;
            }
            if (t instanceof TimeoutException) {
                return ErrorCounts.REQUEST_TIMEOUT;
            }
            if (t instanceof JetStreamApiException) {
                return ErrorCounts.JS_OTHER;
            }
            String m = t.getMessage() == null ? "" : t.getMessage();
            if (m.contains("503") || m.contains("No Responders")) {
                return ErrorCounts.NO_RESPONDERS;
            }
            if (m.contains("Timeout or no response") || m.contains("response not registered in time")) {
                return ErrorCounts.REQUEST_TIMEOUT;
            }
            if (t instanceof CancellationException && m.contains("connection closing")) {
                return ErrorCounts.DISCONNECTED;
            }
        }
        return jetStream ? ErrorCounts.JS_OTHER : ErrorCounts.OTHER;
    }
}
