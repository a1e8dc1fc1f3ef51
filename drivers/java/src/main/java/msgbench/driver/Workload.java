package msgbench.driver;

/**
 * One kind of scenario run with jnats. {@link #prepare} does everything that is not measured
 * (connect, subscribe, look up the stream) before {@code ready}; {@link #run} runs from time
 * zero to the result; {@link #close} releases the connections.
 */
public interface Workload extends AutoCloseable {
    /** Connects and sets up; fails with {@code connect} or {@code usage} errors. */
    void prepare() throws DriverException;

    /** What the {@code ready} line's {@code notes} says about how the library is used. */
    String notes();

    /** Messages (or requests) sent so far, for progress lines. */
    long sent();

    /** Messages (or replies, or acks) received so far, for progress lines. */
    long received();

    /** Runs the scenario from time zero ({@link RunContext#startNs()}) to its result. */
    Report.Result run() throws InterruptedException;

    @Override
    void close();

    static Workload create(RunContext ctx) {
        return switch (ctx.scenario().kind()) {
            case PUBSUB -> new PubSubWorkload(ctx);
            case LATENCY -> new LatencyWorkload(ctx);
            case REQUEST -> new RequestWorkload(ctx);
            case JS_PUB -> new JsPubWorkload(ctx);
        };
    }
}
