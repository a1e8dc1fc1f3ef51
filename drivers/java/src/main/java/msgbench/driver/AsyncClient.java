package msgbench.driver;

import org.HdrHistogram.Histogram;

import java.util.concurrent.CompletableFuture;
import java.util.function.ToLongFunction;

/**
 * One client that keeps up to {@code in_flight} requests outstanding through a library call
 * returning a {@link CompletableFuture} ({@code requestWithTimeout}, {@code publishAsync}) and
 * times each answer: closed loop without a rate (a new request as soon as a slot is free),
 * open loop with one (request n is due n/rate seconds after time zero; corrected latency is
 * measured from the due time).
 *
 * <p>Answers complete on the library's threads; everything they record is guarded by the
 * client's {@link Window} monitor, so once the window is empty all answers are recorded.
 *
 * @param <R> what the library answers with (a Message, a PublishAck)
 */
final class AsyncClient<R> implements TimedClient {
    /** Sends one request or publish; the future completes with its answer. */
    interface Sender<R> {
        CompletableFuture<R> send(byte[] payload);
    }

    /** Called under the window's monitor for every answer that came in time. */
    interface OnAnswer<R> {
        void accept(R answer);
    }

    private final int id;
    private final RunContext ctx;
    private final Pacer pacer;
    private final Window window;
    private final Sender<R> sender;
    private final ToLongFunction<R> answerBytes;
    private final OnAnswer<R> onAnswer;
    private final boolean jetStream;
    private final byte[] unstamped;
    private final long warmupNs;

    // Guarded by window.
    private final Histogram corrected = Latencies.newHistogram();
    private final Histogram uncorrected = Latencies.newHistogram();
    private final SeqTracker tracker = new SeqTracker();
    private long bytes;
    private long lastAnswerNs;

    private volatile long sent;
    private volatile long answered;
    private long firstSendNs;
    private long lastSendNs;

    AsyncClient(int id, RunContext ctx, Pacer pacer, Sender<R> sender, ToLongFunction<R> answerBytes,
                OnAnswer<R> onAnswer, boolean jetStream) {
        this.id = id;
        this.ctx = ctx;
        this.pacer = pacer;
        this.window = new Window(ctx.scenario().inFlight(), ctx.scenario().timeoutNs());
        this.sender = sender;
        this.answerBytes = answerBytes;
        this.onAnswer = onAnswer;
        this.jetStream = jetStream;
        Scenario sc = ctx.scenario();
        this.unstamped = sc.stamped() ? null : new byte[sc.size()];
        this.warmupNs = sc.warmupMs() * 1_000_000L;
    }

    @Override
    public void run() {
        try {
            send();
            window.awaitEmpty(ctx.drainDeadlineNs());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void send() throws InterruptedException {
        Scenario sc = ctx.scenario();
        long limit = sc.counted() ? sc.msgs() : Long.MAX_VALUE;
        long t0 = ctx.startNs();
        long end = ctx.endNs();
        // Bounded by the request count, the duration, or a stop request.
        for (long n = 0; n < limit && !ctx.stopping(); n++) {
            long due = -1;
            if (pacer != null) {
                due = t0 + pacer.offsetNs(n);
                if (due >= end || !Pacer.waitUntil(due, ctx)) {
                    return;
                }
            } else if (end != Long.MAX_VALUE && System.nanoTime() >= end) {
                return;
            }
            Window.Slot slot = window.acquire(n, due, ctx);
            if (slot == null) {
                return;
            }
            byte[] payload = unstamped != null ? unstamped : Stamp.payload(sc.size(), n, id);
            CompletableFuture<R> f;
            try {
                f = sender.send(payload);
            } catch (RuntimeException e) {
                window.abandon(slot);
                ctx.errors().add(jetStream ? ErrorCounts.JS_OTHER : ErrorCounts.OTHER);
                System.err.println("msgbench-driver-java: client " + id + ": send: " + e);
                if (e instanceof IllegalStateException && e.getMessage() != null
                        && e.getMessage().contains("Closed")) {
                    return;
                }
                continue;
            }
            if (n == 0) {
                firstSendNs = slot.sentNs;
            }
            lastSendNs = slot.sentNs;
            sent = n + 1;
            f.whenComplete((answer, failure) -> settle(slot, answer, failure));
        }
    }

    private void settle(Window.Slot slot, R answer, Throwable failure) {
        long now = System.nanoTime();
        synchronized (window) {
            if (!window.complete(slot)) {
                return; // timed out already; a late answer does not count
            }
            if (failure != null) {
                ctx.errors().add(Failures.kind(failure, jetStream));
                return;
            }
            if (slot.dueNs - ctx.startNs() >= warmupNs) {
                Latencies.record(corrected, now - slot.dueNs);
                Latencies.record(uncorrected, now - slot.sentNs);
            }
            tracker.record(slot.seq);
            bytes += answerBytes.applyAsLong(answer);
            lastAnswerNs = now;
            onAnswer.accept(answer);
            answered = answered + 1;
        }
    }

    @Override
    public long sent() {
        return sent;
    }

    @Override
    public long answered() {
        return answered;
    }

    /** Requests this client timed out itself (the library's own timeouts arrive as failures). */
    long timeouts() {
        return window.timeouts();
    }

    @Override
    public Histogram corrected() {
        synchronized (window) {
            return corrected.copy();
        }
    }

    @Override
    public Histogram uncorrected() {
        synchronized (window) {
            return uncorrected.copy();
        }
    }

    long duplicated() {
        synchronized (window) {
            return tracker.duplicated();
        }
    }

    long reordered() {
        synchronized (window) {
            return tracker.reordered();
        }
    }

    @Override
    public Report.Client pubReport() {
        long n = sent;
        return Report.Client.pub(id, n, n * ctx.scenario().size(),
                n == 0 ? 0 : (lastSendNs - firstSendNs) / 1e9);
    }

    @Override
    public Report.Client subReport() {
        synchronized (window) {
            long n = answered;
            return Report.Client.sub(id, n, bytes,
                    n == 0 ? 0 : Math.max(0, lastAnswerNs - ctx.startNs()) / 1e9);
        }
    }
}
