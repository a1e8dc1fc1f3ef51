package msgbench.driver;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * State every part of a run shares: the scenario, its clock (time zero is when {@code start}
 * was read), the stop flag and the error counts.
 */
public final class RunContext {
    private final Scenario scenario;
    private final ErrorCounts errors = new ErrorCounts();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile long startNs;
    private volatile boolean running;
    private volatile boolean stopping;
    private volatile long stopNs;

    public RunContext(Scenario scenario) {
        this.scenario = scenario;
    }

    public Scenario scenario() {
        return scenario;
    }

    public ErrorCounts errors() {
        return errors;
    }

    /** Fixes time zero; errors reported by the library count from now on. */
    public void start(long nowNs) {
        startNs = nowNs;
        running = true;
    }

    public long startNs() {
        return startNs;
    }

    /** True between {@link #start} and {@link #finish}: library errors are counted then. */
    public boolean running() {
        return running;
    }

    /** The measurement is over; connections may now close without that counting as an error. */
    public void finish() {
        running = false;
    }

    /** Asks every loop to stop sending (a {@code stop} command or end of input). */
    public void requestStop() {
        if (!stopping) {
            stopNs = System.nanoTime();
            stopping = true;
            stopped.countDown();
        }
    }

    public boolean stopping() {
        return stopping;
    }

    /** Waits up to {@code nanos} for a stop request; true when one came. */
    public boolean awaitStop(long nanos) throws InterruptedException {
        return stopped.await(nanos, TimeUnit.NANOSECONDS);
    }

    /** When a timed run ends; {@link Long#MAX_VALUE} for counted runs. */
    public long endNs() {
        Long d = scenario.durationMs();
        return d == null ? Long.MAX_VALUE : startNs + d * 1_000_000L;
    }

    /** The latest moment draining may go on to after a stop; {@link Long#MAX_VALUE} before one. */
    public long drainDeadlineNs() {
        return stopping ? stopNs + scenario.timeoutNs() : Long.MAX_VALUE;
    }

    public double secondsSinceStart(long nowNs) {
        return Math.max(0, nowNs - startNs) / 1e9;
    }
}
