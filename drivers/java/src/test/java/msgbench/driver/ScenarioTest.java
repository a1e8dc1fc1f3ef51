package msgbench.driver;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ScenarioTest {
    private static final ObjectMapper M = new ObjectMapper();

    private static ObjectNode base() throws Exception {
        return (ObjectNode) M.readTree(SpecFiles.specDir()
                .resolve("vectors/scenarios/js_pub_async.json").toFile()).get("scenario");
    }

    private static DriverException.Kind failure(ObjectNode s) {
        return assertThrows(DriverException.class, () -> Scenario.parse(M, M.writeValueAsString(s))).kind();
    }

    @Test
    void parsesAVector() throws Exception {
        ObjectNode s = base().put("subject", "x").put("server", "nats://127.0.0.1:4222");
        Scenario sc = Scenario.parse(M, M.writeValueAsString(s));
        assertEquals(Scenario.Kind.JS_PUB, sc.kind());
        assertEquals(1000L, sc.msgs());
        assertEquals(64, sc.inFlight());
        assertEquals(new Scenario.Js("DRIVERVEC", true), sc.js());
        assertTrue(sc.counted());
    }

    @Test
    void rejectsWhatItCannotRun() throws Exception {
        assertEquals(DriverException.Kind.UNSUPPORTED, failure(base().put("kind", "kv_get").put("subject", "x")));
        assertEquals(DriverException.Kind.USAGE, failure(base().put("subject", "x").put("protocol", "v0")));
        assertEquals(DriverException.Kind.USAGE, failure(base().put("subject", "x").put("duration_ms", 5)));
        assertEquals(DriverException.Kind.USAGE, failure(base().put("subject", "x").putNull("js")));
        assertEquals(DriverException.Kind.USAGE, failure(base().put("subject", "")));
        assertEquals(DriverException.Kind.USAGE,
                failure(base().put("subject", "x").put("kind", "latency").put("rate", 0)));
        assertEquals(DriverException.Kind.USAGE,
                failure(base().put("subject", "x").put("kind", "latency").put("rate", 10).put("size", 4)));
        assertThrows(DriverException.class, () -> Scenario.parse(M, "not json"));
    }
}
