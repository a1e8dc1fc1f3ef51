package msgbench.driver;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.Locale;
import java.util.Set;

/**
 * The scenario msgbench sends as the first line (spec/driver-protocol.md, "The scenario").
 *
 * @param msgs        messages per publisher, or {@code null} when the run is timed
 * @param durationMs  the run's length, or {@code null} when it is counted
 * @param rate        total messages (or requests) per second across publishers; 0 is unpaced
 */
public record Scenario(
        Kind kind,
        String server,
        String subject,
        int size,
        Long msgs,
        Long durationMs,
        double rate,
        int pubs,
        int subs,
        int inFlight,
        long warmupMs,
        long timeoutMs,
        long connectTimeoutMs,
        Js js) {

    public static final String PROTOCOL = "msgbench.driver/v1";

    /** The kinds of protocol v1. */
    public enum Kind {
        PUBSUB, LATENCY, REQUEST, JS_PUB;

        public String wire() {
            return name().toLowerCase(Locale.ROOT);
        }

        static Kind fromWire(String s) {
            for (Kind k : values()) {
                if (k.wire().equals(s)) {
                    return k;
                }
            }
            return null;
        }
    }

    /** JetStream publish settings: the stream msgbench created, and how acks are awaited. */
    public record Js(String stream, boolean async) {
    }

    private static final Set<String> FIELDS = Set.of(
            "type", "protocol", "kind", "server", "subject", "size", "msgs", "duration_ms", "rate",
            "pubs", "subs", "in_flight", "warmup_ms", "timeout_ms", "connect_timeout_ms", "js");

    public boolean counted() {
        return msgs != null;
    }

    public boolean paced() {
        return rate > 0;
    }

    public long timeoutNs() {
        return timeoutMs * 1_000_000L;
    }

    /** Size of each message's stamp: 16 bytes (sequence, publisher) when there is room. */
    public boolean stamped() {
        return size >= Stamp.LEN;
    }

    /**
     * Parses and checks one scenario line.
     *
     * @throws DriverException {@code usage} for a malformed scenario, {@code unsupported} for a
     *                         kind this driver does not know
     */
    public static Scenario parse(ObjectMapper mapper, String line) throws DriverException {
        JsonNode n;
        try {
            n = mapper.readTree(line);
        } catch (JsonProcessingException e) {
            throw DriverException.usage("the scenario is not JSON: " + e.getOriginalMessage());
        }
        if (n == null || !n.isObject()) {
            throw DriverException.usage("the scenario is not a JSON object");
        }
        if (!"scenario".equals(text(n, "type"))) {
            throw DriverException.usage("expected {\"type\": \"scenario\", ...} first, got type "
                    + n.get("type"));
        }
        if (!PROTOCOL.equals(text(n, "protocol"))) {
            throw DriverException.usage("unsupported protocol " + n.get("protocol")
                    + ", this driver speaks " + PROTOCOL);
        }
        String kindName = text(n, "kind");
        if (kindName == null) {
            throw DriverException.usage("scenario has no kind");
        }
        Kind kind = Kind.fromWire(kindName);
        if (kind == null) {
            throw new DriverException(DriverException.Kind.UNSUPPORTED,
                    "kind \"" + kindName + "\" is not supported by the jnats driver"
                            + " (it runs pubsub, latency, request and js_pub)");
        }
        n.fieldNames().forEachRemaining(f -> {
            if (!FIELDS.contains(f)) {
                System.err.println("msgbench-driver-java: ignoring unknown scenario field " + f);
            }
        });

        String server = requiredText(n, "server");
        String subject = requiredText(n, "subject");
        if (subject.isEmpty()) {
            throw DriverException.usage("subject is empty");
        }
        int size = (int) integer(n, "size", 0, Integer.MAX_VALUE);
        Long msgs = optionalInteger(n, "msgs");
        Long durationMs = optionalInteger(n, "duration_ms");
        if ((msgs == null) == (durationMs == null)) {
            throw DriverException.usage("exactly one of msgs and duration_ms must be set");
        }
        double rate = number(n, "rate");
        int pubs = (int) integer(n, "pubs", 1, 1_000_000);
        int subs = (int) integer(n, "subs", 0, 1_000_000);
        int inFlight = (int) integer(n, "in_flight", 1, Integer.MAX_VALUE);
        long warmupMs = integer(n, "warmup_ms", 0, Long.MAX_VALUE / 1_000_000);
        long timeoutMs = integer(n, "timeout_ms", 1, Long.MAX_VALUE / 1_000_000);
        long connectTimeoutMs = integer(n, "connect_timeout_ms", 1, Integer.MAX_VALUE);
        Js js = js(n.get("js"));

        switch (kind) {
            case LATENCY -> {
                if (rate <= 0) {
                    throw DriverException.usage("latency needs a rate > 0 (it is open loop)");
                }
                if (size < Stamp.SEQ_LEN) {
                    throw DriverException.usage("latency needs size >= " + Stamp.SEQ_LEN
                            + " to carry each message's sequence number");
                }
            }
            case JS_PUB -> {
                if (js == null) {
                    throw DriverException.usage("js_pub needs \"js\": {\"stream\", \"mode\"}");
                }
            }
            default -> {
            }
        }
        return new Scenario(kind, server, subject, size, msgs, durationMs, rate, pubs, subs,
                inFlight, warmupMs, timeoutMs, connectTimeoutMs, js);
    }

    private static Js js(JsonNode j) throws DriverException {
        if (j == null || j.isNull()) {
            return null;
        }
        if (!j.isObject()) {
            throw DriverException.usage("js must be null or an object");
        }
        String stream = requiredText(j, "stream");
        String mode = requiredText(j, "mode");
        return switch (mode) {
            case "sync" -> new Js(stream, false);
            case "async" -> new Js(stream, true);
            default -> throw DriverException.usage("js.mode must be sync or async, not " + mode);
        };
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v != null && v.isTextual() ? v.asText() : null;
    }

    private static String requiredText(JsonNode n, String field) throws DriverException {
        String s = text(n, field);
        if (s == null) {
            throw DriverException.usage(field + " must be a string");
        }
        return s;
    }

    private static long integer(JsonNode n, String field, long min, long max) throws DriverException {
        JsonNode v = n.get(field);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw DriverException.usage(field + " must be an integer");
        }
        long x = v.asLong();
        if (x < min || x > max) {
            throw DriverException.usage(field + " must be in " + min + ".." + max + ", got " + x);
        }
        return x;
    }

    private static Long optionalInteger(JsonNode n, String field) throws DriverException {
        JsonNode v = n.get(field);
        if (v == null) {
            throw DriverException.usage(field + " is required (an integer or null)");
        }
        if (v.isNull()) {
            return null;
        }
        return integer(n, field, 1, Long.MAX_VALUE / 1_000_000);
    }

    private static double number(JsonNode n, String field) throws DriverException {
        JsonNode v = n.get(field);
        if (v == null || !v.isNumber()) {
            throw DriverException.usage(field + " must be a number");
        }
        double x = v.asDouble();
        if (!(x >= 0) || Double.isInfinite(x)) {
            throw DriverException.usage(field + " must be a finite number >= 0");
        }
        return x;
    }
}
