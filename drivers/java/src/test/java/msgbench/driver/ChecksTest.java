package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

class ChecksTest {
    private static final JsonNode R = parse(
            "{\"clients\":[1,2],\"delivery\":{\"lost\":0,\"accounting\":\"exact\",\"duplicated\":null},"
                    + "\"latency\":{\"count\":1000}}");

    private static JsonNode parse(String s) {
        try {
            return new ObjectMapper().readTree(s);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void evaluatesPathsOperatorsAndLiterals() {
        assertNull(Checks.failure(R, "clients.length == 2"));
        assertNull(Checks.failure(R, "delivery.lost == 0"));
        assertNull(Checks.failure(R, "delivery.accounting == \"exact\""));
        assertNull(Checks.failure(R, "delivery.duplicated == null"));
        assertNull(Checks.failure(R, "latency.count >= 1000"));
        assertNull(Checks.failure(R, "latency.count < 1000.5"));
        assertNull(Checks.failure(R, "latency.count != 3"));
        assertNotNull(Checks.failure(R, "latency.count > 1000"));
        assertNotNull(Checks.failure(R, "delivery.accounting == \"count\""));
        assertNotNull(Checks.failure(R, "js.acked == 0"), "a missing path fails");
        assertNotNull(Checks.failure(R, "delivery.accounting > 1"));
    }
}
