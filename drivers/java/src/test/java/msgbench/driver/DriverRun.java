package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One end-to-end run, as msgbench does it: scenario, ready, start, progress..., result; every
 * stdout line is checked against the protocol schema.
 */
final class DriverRun {
    /** What happens between {@code start} and the result (a stop, closing stdin...). */
    interface AfterStart {
        void accept(DriverProcess p) throws Exception;
    }

    /** The outcome: the ready line (or null), the last line (result or error), every line. */
    record Outcome(JsonNode ready, JsonNode last, List<JsonNode> lines, int exit, String stderr,
                   Duration startToEnd) {
        JsonNode result() {
            if (last == null || !"result".equals(last.path("type").asText())) {
                throw new AssertionError("no result: " + lines + "\nstderr:\n" + stderr);
            }
            return last.get("result");
        }
    }

    private DriverRun() {
    }

    static Outcome run(String scenarioLine, Duration limit, AfterStart afterStart) throws Exception {
        try (DriverProcess p = DriverProcess.start()) {
            p.send(scenarioLine);
            List<JsonNode> lines = new ArrayList<>();
            String first = p.nextLine(Duration.ofSeconds(30));
            if (first == null) {
                throw new AssertionError("the driver closed stdout at once; stderr:\n" + p.stderr());
            }
            JsonNode n = ProtocolSchema.validate(first);
            lines.add(n);
            if (!"ready".equals(n.get("type").asText())) {
                return new Outcome(null, n, lines, p.waitFor(Duration.ofSeconds(10)), p.stderr(), Duration.ZERO);
            }
            JsonNode ready = n;
            long t0 = System.nanoTime();
            p.send("{\"type\":\"start\"}");
            afterStart.accept(p);
            JsonNode last = null;
            long deadline = System.nanoTime() + limit.toNanos();
            // Bounded by the deadline and by the driver's output.
            while (System.nanoTime() < deadline) {
                String l = p.nextLine(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                if (l == null) {
                    break;
                }
                n = ProtocolSchema.validate(l);
                lines.add(n);
                String type = n.get("type").asText();
                if (type.equals("result") || type.equals("error")) {
                    last = n;
                    break;
                }
                if (!type.equals("progress")) {
                    throw new AssertionError("unexpected line after start: " + l);
                }
            }
            Duration took = Duration.ofNanos(System.nanoTime() - t0);
            int exit = p.waitFor(Duration.ofSeconds(15));
            String tail = p.nextLine(Duration.ofSeconds(5));
            if (tail != null) {
                throw new AssertionError("line after the result: " + tail);
            }
            return new Outcome(ready, last, lines, exit, p.stderr(), took);
        }
    }

    static Outcome run(String scenarioLine, Duration limit) throws Exception {
        return run(scenarioLine, limit, p -> { });
    }
}
