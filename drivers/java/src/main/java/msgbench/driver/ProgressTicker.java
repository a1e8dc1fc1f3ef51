package msgbench.driver;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/** Writes a {@code progress} line about once a second while the run goes on. */
public final class ProgressTicker implements AutoCloseable {
    private final ScheduledExecutorService timer;

    public ProgressTicker(ProtocolWriter out, RunContext ctx, Workload w) {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "msgbench-progress");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(
                () -> out.progress(ctx.secondsSinceStart(System.nanoTime()), w.sent(), w.received()),
                1, 1, TimeUnit.SECONDS);
    }

    /** Stops the ticker; no progress line follows once this returns. */
    @Override
    public void close() {
        timer.shutdownNow();
        try {
            timer.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
