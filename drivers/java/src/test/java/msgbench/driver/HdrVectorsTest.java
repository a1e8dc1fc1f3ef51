package msgbench.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * spec/vectors/hdr: the compressed V2 form decodes to exactly the listed buckets; a histogram
 * built from the listed values survives its own compressed encoding with the same buckets; and
 * its uncompressed V2 bytes equal the vector's byte for byte.
 */
class HdrVectorsTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    @TestFactory
    Stream<DynamicTest> vectors() throws Exception {
        List<Path> files = SpecFiles.jsonFiles("vectors/hdr");
        assertFalse(files.isEmpty(), "no hdr vectors");
        List<DynamicTest> tests = new ArrayList<>();
        for (Path f : files) {
            JsonNode v = MAPPER.readTree(f.toFile());
            String name = v.get("name").asText();
            tests.add(DynamicTest.dynamicTest(name + ": decode compressed", () -> decodesCompressed(v)));
            tests.add(DynamicTest.dynamicTest(name + ": build, encode, decode", () -> roundTrips(v)));
            tests.add(DynamicTest.dynamicTest(name + ": uncompressed V2 bytes", () -> uncompressedBytes(v)));
        }
        return tests.stream();
    }

    private static void decodesCompressed(JsonNode v) {
        Histogram h = Latencies.decodeCompressed(v.get("v2_compressed_base64").asText());
        assertEquals(v.get("lowest_discernible").asLong(), h.getLowestDiscernibleValue());
        assertEquals(v.get("highest_trackable").asLong(), h.getHighestTrackableValue());
        assertEquals(v.get("significant_digits").asInt(), h.getNumberOfSignificantValueDigits());
        assertSameCounts(v, h);
    }

    private static void roundTrips(JsonNode v) {
        Histogram built = fromValues(v);
        assertSameCounts(v, built);
        Histogram back = Latencies.decodeCompressed(Latencies.encodeCompressed(built));
        assertSameCounts(v, back);
    }

    private static void uncompressedBytes(JsonNode v) {
        assertEquals(v.get("v2_base64").asText(), Latencies.encodeUncompressed(fromValues(v)));
    }

    private static Histogram fromValues(JsonNode v) {
        Histogram h = Latencies.newHistogram();
        for (JsonNode pair : v.get("values")) {
            h.recordValueWithCount(pair.get(0).asLong(), pair.get(1).asLong());
        }
        return h;
    }

    /** Buckets as [highest equivalent value, count], totals, min, max and two percentiles. */
    private static void assertSameCounts(JsonNode v, Histogram h) {
        List<List<Long>> expected = new ArrayList<>();
        for (JsonNode pair : v.get("recorded_buckets")) {
            expected.add(List.of(pair.get(0).asLong(), pair.get(1).asLong()));
        }
        List<List<Long>> actual = new ArrayList<>();
        for (HistogramIterationValue x : h.recordedValues()) {
            actual.add(List.of(x.getValueIteratedTo(), x.getCountAtValueIteratedTo()));
        }
        assertEquals(expected, actual, "recorded buckets");
        assertEquals(v.get("total_count").asLong(), h.getTotalCount(), "total_count");
        assertEquals(v.get("max").asLong(), h.getMaxValue(), "max");
        assertEquals(v.get("min").asLong(), h.getMinValue(), "min");
        assertEquals(v.get("p50").asLong(), h.getValueAtPercentile(50), "p50");
        assertEquals(v.get("p99").asLong(), h.getValueAtPercentile(99), "p99");
    }
}
