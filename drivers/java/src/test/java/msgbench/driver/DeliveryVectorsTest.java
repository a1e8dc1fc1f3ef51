package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * spec/vectors/delivery: each file's arrivals, stamped as this driver's publishers stamp them,
 * go into one subscriber's {@link DeliveryLog}; the result's delivery section and every
 * publisher's {@link SeqTracker} must come to exactly the expected counts.
 */
class DeliveryVectorsTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final List<String> COUNTS =
            List.of("sent", "received", "unique", "lost", "duplicated", "reordered");

    @TestFactory
    Stream<DynamicTest> vectors() throws Exception {
        List<Path> files = SpecFiles.jsonFiles("vectors/delivery");
        assertFalse(files.isEmpty(), "no delivery vectors");
        List<DynamicTest> tests = new ArrayList<>();
        for (Path f : files) {
            JsonNode v = MAPPER.readTree(f.toFile());
            String name = v.get("name").asText();
            assertEquals(f.getFileName().toString(), name + ".json", "name does not match the file");
            tests.add(DynamicTest.dynamicTest(name, () -> check(v)));
        }
        return tests.stream();
    }

    private static void check(JsonNode v) {
        JsonNode sentNode = v.get("sent");
        int publishers = sentNode.size();
        long[] sent = new long[publishers];
        for (int p = 0; p < publishers; p++) {
            sent[p] = sentNode.get(p).asLong();
        }
        DeliveryLog log = new DeliveryLog(publishers, true);
        long received = 0;
        for (JsonNode a : v.get("arrivals")) {
            log.record(Stamp.payload(Stamp.LEN, a.get(1).asLong(), a.get(0).asLong()));
            received++;
        }
        assertEquals(0, log.foreign(), "an arrival outside the vector's publishers");
        assertEquals(0, log.unstamped(), "an arrival without a stamp");

        Report.Delivery d = DeliveryLog.summarize(sent, List.of(new DeliveryLog.Seen(received, log)), true);
        long unique = 0;
        for (int p = 0; p < publishers; p++) {
            unique += log.tracker(p).unique();
        }
        JsonNode expect = v.get("expect");
        assertEquals(expected(expect),
                got(d.sent(), d.received(), unique, d.lost(), d.duplicated(), d.reordered()), "total");
        assertEquals(expect.get("accounting").asText(), d.accounting());

        JsonNode want = expect.get("publishers");
        assertEquals(publishers, want.size(), "one expectation per publisher");
        for (int p = 0; p < publishers; p++) {
            SeqTracker t = log.tracker(p);
            assertEquals(p, want.get(p).get("id").asInt());
            // Per publisher, as msgbench counts it: received = unique + duplicated, lost = sent - unique.
            assertEquals(expected(want.get(p)),
                    got(sent[p], t.unique() + t.duplicated(), t.unique(), Math.max(0, sent[p] - t.unique()),
                            t.duplicated(), t.reordered()),
                    "publisher " + p);
        }
    }

    private static Map<String, Long> expected(JsonNode n) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (String k : COUNTS) {
            JsonNode x = n.get(k);
            m.put(k, x == null || !x.isIntegralNumber() ? null : x.asLong());
        }
        return m;
    }

    private static Map<String, Long> got(long sent, long received, long unique, long lost, Long duplicated,
            Long reordered) {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("sent", sent);
        m.put("received", received);
        m.put("unique", unique);
        m.put("lost", lost);
        m.put("duplicated", duplicated);
        m.put("reordered", reordered);
        return m;
    }
}
