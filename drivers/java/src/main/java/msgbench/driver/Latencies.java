package msgbench.driver;

import org.HdrHistogram.Histogram;

import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.zip.Deflater;

/**
 * Latency histograms as the protocol wants them: nanoseconds, lowest discernible value 1,
 * highest trackable one hour, 3 significant digits; shipped as base64 of the V2
 * deflate-compressed encoding.
 */
public final class Latencies {
    public static final long LOWEST = 1;
    public static final long HIGHEST = 3_600_000_000_000L;
    public static final int DIGITS = 3;

    private Latencies() {
    }

    public static Histogram newHistogram() {
        return new Histogram(LOWEST, HIGHEST, DIGITS);
    }

    /** Records {@code ns}, clamped into the trackable range. */
    public static void record(Histogram h, long ns) {
        h.recordValue(Math.max(LOWEST, Math.min(HIGHEST, ns)));
    }

    /** Base64 of the V2 compressed encoding ({@code encodeIntoCompressedByteBuffer}). */
    public static String encodeCompressed(Histogram h) {
        ByteBuffer buf = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int n = h.encodeIntoCompressedByteBuffer(buf, Deflater.DEFAULT_COMPRESSION);
        return Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buf.array(), n));
    }

    /** Base64 of the uncompressed V2 encoding ({@code encodeIntoByteBuffer}). */
    public static String encodeUncompressed(Histogram h) {
        ByteBuffer buf = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int n = h.encodeIntoByteBuffer(buf);
        return Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buf.array(), n));
    }

    public static Histogram decodeCompressed(String base64) {
        try {
            return Histogram.decodeFromCompressedByteBuffer(
                    ByteBuffer.wrap(Base64.getDecoder().decode(base64)), 0);
        } catch (java.util.zip.DataFormatException e) {
            throw new IllegalArgumentException("not a compressed HdrHistogram: " + e.getMessage(), e);
        }
    }

    public static Report.Latency report(Histogram h) {
        return new Report.Latency(h.getTotalCount(), encodeCompressed(h));
    }
}
