package msgbench.driver;

import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** Errors by msgbench's kinds ({@code slow_consumer}, {@code request_timeout}, ...). */
public final class ErrorCounts {
    public static final String SLOW_CONSUMER = "slow_consumer";
    public static final String DISCONNECTED = "disconnected";
    public static final String REQUEST_TIMEOUT = "request_timeout";
    public static final String NO_RESPONDERS = "no_responders";
    public static final String JS_OTHER = "js_other";
    public static final String OTHER = "other";

    private final ConcurrentHashMap<String, LongAdder> counts = new ConcurrentHashMap<>();

    public void add(String kind) {
        add(kind, 1);
    }

    public void add(String kind, long n) {
        if (n > 0) {
            counts.computeIfAbsent(kind, k -> new LongAdder()).add(n);
        }
    }

    public long get(String kind) {
        LongAdder a = counts.get(kind);
        return a == null ? 0 : a.sum();
    }

    /** Every kind counted, plus the given ones at 0, sorted by name. */
    public Map<String, Long> snapshot(Collection<String> always) {
        Map<String, Long> m = new TreeMap<>();
        always.forEach(k -> m.put(k, 0L));
        counts.forEach((k, v) -> m.put(k, v.sum()));
        return m;
    }
}
