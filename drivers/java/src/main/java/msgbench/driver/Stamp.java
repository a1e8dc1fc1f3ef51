package msgbench.driver;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The stamp at the head of a payload of 16 bytes or more: bytes 0-7 the message's sequence
 * number (from 0 per publisher), bytes 8-15 the publisher's index, both little-endian u64.
 */
public final class Stamp {
    public static final int LEN = 16;
    public static final int SEQ_LEN = 8;

    private static final VarHandle LONG_LE =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private Stamp() {
    }

    /** A new payload of {@code size} bytes carrying the stamp where there is room for it. */
    public static byte[] payload(int size, long seq, long publisher) {
        byte[] p = new byte[size];
        if (size >= SEQ_LEN) {
            LONG_LE.set(p, 0, seq);
        }
        if (size >= LEN) {
            LONG_LE.set(p, SEQ_LEN, publisher);
        }
        return p;
    }

    public static long seq(byte[] p) {
        return (long) LONG_LE.get(p, 0);
    }

    public static long publisher(byte[] p) {
        return (long) LONG_LE.get(p, SEQ_LEN);
    }
}
