package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The protocol's edges: stop, end of input, errors with exit status 2, failures by kind. */
class ProtocolTest {
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

    private static ObjectNode scenario(String kind) {
        ObjectNode s = MAPPER.createObjectNode()
                .put("type", "scenario")
                .put("protocol", "msgbench.driver/v1")
                .put("kind", kind)
                .put("server", server.url())
                .put("subject", "msgbench.java.proto." + UUID.randomUUID().toString().substring(0, 8))
                .put("size", 64)
                .put("msgs", 1000)
                .putNull("duration_ms")
                .put("rate", 0)
                .put("pubs", 1)
                .put("subs", 1)
                .put("in_flight", 1)
                .put("warmup_ms", 0)
                .put("timeout_ms", 2000)
                .put("connect_timeout_ms", 2000);
        s.putNull("js");
        return s;
    }

    /** A timed pubsub run of a minute, stopped after its first progress line. */
    @Test
    void stopMidRunGivesAnInterruptedResult() throws Exception {
        ObjectNode s = scenario("pubsub").put("rate", 5000).putNull("msgs").put("duration_ms", 60_000);
        long[] stopAt = new long[1];
        DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(30), p -> {
            String l = p.nextLine(Duration.ofSeconds(10));
            assertEquals("progress", ProtocolSchema.validate(l).get("type").asText());
            stopAt[0] = System.nanoTime();
            p.send("{\"type\":\"stop\"}");
        });
        assertEquals(0, o.exit(), o.stderr());
        JsonNode r = o.result();
        assertTrue(r.get("interrupted").asBoolean());
        long sent = r.at("/delivery/sent").asLong();
        assertTrue(sent > 1000 && sent < 60 * 5000, "sent " + sent);
        assertEquals(sent, r.at("/delivery/received").asLong());
        assertEquals(0, r.at("/delivery/lost").asLong());
        assertTrue(o.startToEnd().toMillis() < 20_000, "took " + o.startToEnd());
    }

    @Test
    void endOfInputStopsLikeStop() throws Exception {
        ObjectNode s = scenario("latency").put("rate", 2000).put("size", 16)
                .putNull("msgs").put("duration_ms", 60_000);
        DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(30), p -> {
            Thread.sleep(500);
            p.closeStdin();
        });
        assertEquals(0, o.exit(), o.stderr());
        JsonNode r = o.result();
        assertTrue(r.get("interrupted").asBoolean());
        long n = r.at("/delivery/received").asLong();
        assertTrue(n > 100, "received " + n);
        assertEquals(n, r.at("/latency/count").asLong());
    }

    @Test
    void unsupportedKindIsAnErrorWithStatus2() throws Exception {
        DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(scenario("kv_put")), Duration.ofSeconds(10));
        assertEquals(2, o.exit());
        assertEquals("error", o.last().get("type").asText());
        assertEquals("unsupported", o.last().get("kind").asText());
    }

    @Test
    void unreachableServerIsAConnectError() throws Exception {
        int port;
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = ss.getLocalPort();
        }
        ObjectNode s = scenario("pubsub").put("server", "nats://127.0.0.1:" + port).put("connect_timeout_ms", 500);
        DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(10));
        assertEquals(2, o.exit());
        assertEquals("connect", o.last().get("kind").asText());
    }

    @Test
    void malformedScenarioIsAUsageError() throws Exception {
        ObjectNode s = scenario("pubsub").put("msgs", 10).put("duration_ms", 10);
        DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(10));
        assertEquals(2, o.exit());
        assertEquals("usage", o.last().get("kind").asText());
    }

    @Test
    void requestsWithoutRespondersCountAsNoResponders() throws Exception {
        ObjectNode s = scenario("request").put("msgs", 20).put("subs", 0);
        JsonNode r = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(30)).result();
        assertEquals(20, r.at("/errors/no_responders").asLong(), r.toString());
        assertEquals(20, r.at("/delivery/lost").asLong());
        assertEquals(0, r.at("/latency/count").asLong());
    }

    @Test
    void unansweredRequestsTimeOut() throws Exception {
        ObjectNode s = scenario("request").put("msgs", 3).put("subs", 0).put("timeout_ms", 300);
        try (Connection nc = server.connect()) {
            // A responder that never answers: the requests reach it, and nothing comes back.
            Dispatcher silent = nc.createDispatcher(m -> { });
            silent.subscribe(s.get("subject").asText(), "msgbench");
            nc.flush(Duration.ofSeconds(5));
            DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(30));
            JsonNode r = o.result();
            assertEquals(3, r.at("/errors/request_timeout").asLong(), r.toString());
            assertEquals(0, r.at("/errors/no_responders").asLong());
            assertEquals(3, r.at("/delivery/sent").asLong());
            assertEquals(0, r.at("/delivery/received").asLong());
        }
    }

    @Test
    void missingStreamIsAUsageError() throws Exception {
        ObjectNode s = scenario("js_pub").put("subs", 0);
        s.putObject("js").put("stream", "NOSUCHSTREAM").put("mode", "async");
        DriverRun.Outcome o = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(10));
        assertEquals(2, o.exit());
        assertEquals("usage", o.last().get("kind").asText());
    }

    @Test
    void pubsubManyToManyIsExact() throws Exception {
        ObjectNode s = scenario("pubsub").put("pubs", 3).put("subs", 2).put("msgs", 5000).put("size", 128);
        JsonNode r = DriverRun.run(MAPPER.writeValueAsString(s), Duration.ofSeconds(60)).result();
        assertEquals(15_000, r.at("/delivery/sent").asLong());
        assertEquals(30_000, r.at("/delivery/received").asLong());
        assertEquals(0, r.at("/delivery/lost").asLong());
        assertEquals(0, r.at("/delivery/duplicated").asLong());
        assertEquals(0, r.at("/delivery/reordered").asLong());
        assertEquals(5, r.at("/clients").size());
    }
}
