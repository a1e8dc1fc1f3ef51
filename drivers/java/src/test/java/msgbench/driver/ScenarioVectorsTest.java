package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * spec/vectors/scenarios: each scenario end to end against a nats-server of the test's own,
 * after its setup (an echo responder in queue group "msgbench" for request, the stream for
 * js_pub), with every line checked against the schema and every check applied.
 */
class ScenarioVectorsTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static NatsServer server;

    @BeforeAll
    static void startServer() throws Exception {
        server = NatsServer.start();
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (server != null) {
            server.close();
        }
    }

    @TestFactory
    Stream<DynamicTest> scenarios() throws Exception {
        List<Path> files = SpecFiles.jsonFiles("vectors/scenarios");
        assertFalse(files.isEmpty(), "no scenario vectors");
        List<DynamicTest> tests = new ArrayList<>();
        for (Path f : files) {
            JsonNode v = MAPPER.readTree(f.toFile());
            tests.add(DynamicTest.dynamicTest(v.get("name").asText(), () -> runVector(v)));
        }
        return tests.stream();
    }

    private static void runVector(JsonNode vector) throws Exception {
        ObjectNode scenario = vector.get("scenario").deepCopy();
        String subject = "msgbench.java." + vector.get("name").asText() + "."
                + UUID.randomUUID().toString().substring(0, 8);
        scenario.put("server", server.url());
        scenario.put("subject", subject);
        ProtocolSchema.validate(MAPPER.writeValueAsString(scenario));

        String kind = scenario.get("kind").asText();
        try (Connection nc = server.connect()) {
            Runnable teardown = setup(nc, kind, scenario);
            try {
                DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(scenario), Duration.ofSeconds(60));
                assertEquals(0, o.exit(), "exit status; stderr:\n" + o.stderr());
                JsonNode ready = o.ready();
                assertEquals("java", ready.at("/client/language").asText());
                assertEquals("jnats", ready.at("/client/library").asText());
                assertTrue(ready.at("/client/version").asText().matches("\\d+\\.\\d+\\.\\d+.*"),
                        "version " + ready.at("/client/version"));
                JsonNode result = o.result();
                assertFalse(result.get("interrupted").asBoolean());
                List<String> failed = new ArrayList<>();
                for (JsonNode c : vector.get("checks")) {
                    String why = Checks.failure(result, c.asText());
                    if (why != null) {
                        failed.add(why);
                    }
                }
                assertTrue(failed.isEmpty(), "failed checks " + failed + "\nresult: " + result
                        + "\nstderr:\n" + o.stderr());
                if (kind.equals("js_pub")) {
                    // msgbench reconciles the acknowledged sequences with the stream.
                    var state = nc.jetStreamManagement().getStreamInfo(scenario.at("/js/stream").asText())
                            .getStreamState();
                    assertEquals(state.getMsgCount(), result.at("/js/acked").asLong(), "stored vs acked");
                    assertEquals(state.getLastSequence(), result.at("/js/last_seq").asLong(), "last_seq");
                    assertEquals(state.getFirstSequence(), result.at("/js/first_seq").asLong(), "first_seq");
                }
                // Whatever the vector checks, the latency histograms must decode to their counts.
                StringBuilder summary = new StringBuilder(vector.get("name").asText()).append(':');
                for (JsonNode c : result.get("clients")) {
                    double secs = c.get("seconds").asDouble();
                    summary.append(String.format(" %s%d %d msgs in %.3f s (%.0f/s);", c.get("role").asText(),
                            c.get("id").asInt(), c.get("msgs").asLong(), secs,
                            secs > 0 ? c.get("msgs").asLong() / secs : 0.0));
                }
                for (String h : List.of("latency", "latency_uncorrected")) {
                    if (result.has(h)) {
                        var hist = Latencies.decodeCompressed(result.at("/" + h + "/hdr").asText());
                        assertEquals(result.at("/" + h + "/count").asLong(), hist.getTotalCount(), h);
                        summary.append(String.format(" %s p50 %.1f us p99 %.1f us max %.1f us;", h,
                                hist.getValueAtPercentile(50) / 1e3, hist.getValueAtPercentile(99) / 1e3,
                                hist.getMaxValue() / 1e3));
                    }
                }
                // For people: target/surefire-reports/msgbench.driver.ScenarioVectorsTest-output.txt
                System.out.println(summary);
            } finally {
                teardown.run();
            }
        }
    }

    /** The vector's setup, as msgbench performs it; returns its undoing. */
    private static Runnable setup(Connection nc, String kind, ObjectNode scenario) throws Exception {
        String subject = scenario.get("subject").asText();
        switch (kind) {
            case "request" -> {
                Dispatcher d = nc.createDispatcher(m -> nc.publish(m.getReplyTo(), m.getData()));
                d.subscribe(subject, "msgbench");
                nc.flush(Duration.ofSeconds(5));
                return () -> nc.closeDispatcher(d);
            }
            case "js_pub" -> {
                String stream = scenario.at("/js/stream").asText();
                JetStreamManagement jsm = nc.jetStreamManagement();
                jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subject)
                        .storageType(StorageType.Memory).build());
                return () -> {
                    try {
                        jsm.deleteStream(stream);
                    } catch (Exception e) {
                        throw new AssertionError("cannot delete stream " + stream, e);
                    }
                };
            }
            default -> {
                return () -> { };
            }
        }
    }
}
