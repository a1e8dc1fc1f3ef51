package msgbench.driver;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

import java.util.List;
import java.util.Map;

/** The {@code result} object of protocol v1, serialized by Jackson exactly as the schema says. */
public final class Report {
    private Report() {
    }

    public record Result(
            boolean interrupted,
            List<Client> clients,
            Delivery delivery,
            Map<String, Long> errors,
            @JsonInclude(JsonInclude.Include.NON_NULL) Latency latency,
            @JsonProperty("latency_uncorrected") @JsonInclude(JsonInclude.Include.NON_NULL)
            Latency latencyUncorrected,
            @JsonInclude(JsonInclude.Include.NON_NULL) Js js) {
    }

    /** One connection that published or received, with its own span in seconds. */
    public record Client(String role, int id, long msgs, long bytes, double seconds) {
        public static Client pub(int id, long msgs, long bytes, double seconds) {
            return new Client("pub", id, msgs, bytes, seconds);
        }

        public static Client sub(int id, long msgs, long bytes, double seconds) {
            return new Client("sub", id, msgs, bytes, seconds);
        }
    }

    /**
     * Delivery accounting. {@code duplicated} and {@code reordered} are written as {@code null}
     * (unknown) under {@code count} and {@code none} accounting, never as a reassuring 0.
     */
    public record Delivery(
            long sent,
            long received,
            long lost,
            @JsonInclude(JsonInclude.Include.ALWAYS) Long duplicated,
            @JsonInclude(JsonInclude.Include.ALWAYS) Long reordered,
            String accounting) {

        public static Delivery none(long sent) {
            return new Delivery(sent, 0, 0, null, null, "none");
        }
    }

    public record Latency(long count, String hdr) {
    }

    public record Js(
            long acked,
            @JsonProperty("first_seq") long firstSeq,
            @JsonProperty("last_seq") long lastSeq,
            @JsonProperty("duplicate_acks") long duplicateAcks) {
    }
}
