package msgbench.driver;

import io.nats.client.Connection;

/** Plain publishes that ride out the library's back-pressure. */
final class Publishing {
    private Publishing() {
    }

    /**
     * Publishes one message. jnats blocks a publish while its outgoing queue is full and gives
     * up with an {@link IllegalStateException} after its write-queue push timeout (2 s); that is
     * retried until {@code timeout_ms} has passed. False when the message could not be
     * published (counted as {@code other}) or the run was stopped meanwhile.
     */
    static boolean publish(Connection nc, String subject, byte[] payload, RunContext ctx) {
        long deadline = 0;
        // Bounded by the deadline: timeout_ms after the first failure.
        while (true) {
            try {
                nc.publish(subject, payload);
                return true;
            } catch (IllegalStateException e) {
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + ctx.scenario().timeoutNs();
                    System.err.println("msgbench-driver-java: publish: " + e.getMessage());
                }
                if (ctx.stopping() || nc.getStatus() == Connection.Status.CLOSED || now >= deadline) {
                    ctx.errors().add(ErrorCounts.OTHER);
                    return false;
                }
                Thread.onSpinWait();
            }
        }
    }
}
