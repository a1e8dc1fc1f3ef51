package msgbench.driver;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class DeliveryLogTest {
    private static byte[] msg(long pub, long seq) {
        return Stamp.payload(32, seq, pub);
    }

    @Test
    void exactWithLossDuplicatesAndReorder() {
        DeliveryLog a = new DeliveryLog(2, true);
        DeliveryLog b = new DeliveryLog(2, true);
        for (long s = 0; s < 10; s++) {
            a.record(msg(0, s));
            a.record(msg(1, s));
        }
        // b misses 0:3..4, sees 1:2 twice and 1:5 late.
        for (long s = 0; s < 10; s++) {
            if (s != 3 && s != 4) {
                b.record(msg(0, s));
            }
        }
        for (long s : new long[] {0, 1, 2, 2, 3, 4, 6, 7, 5, 8, 9}) {
            b.record(msg(1, s));
        }
        Report.Delivery d = DeliveryLog.summarize(new long[] {10, 10},
                List.of(new DeliveryLog.Seen(20, a), new DeliveryLog.Seen(19, b)), true);
        assertEquals(new Report.Delivery(20, 39, 2, 1L, 1L, "exact"), d);
    }

    @Test
    void publisherNeverHeardFromIsAllLost() {
        DeliveryLog a = new DeliveryLog(2, true);
        for (long s = 0; s < 5; s++) {
            a.record(msg(0, s));
        }
        Report.Delivery d = DeliveryLog.summarize(new long[] {5, 7}, List.of(new DeliveryLog.Seen(5, a)), true);
        assertEquals(7, d.lost());
    }

    @Test
    void unstampedFallsBackToCounts() {
        DeliveryLog a = new DeliveryLog(1, false);
        for (int i = 0; i < 8; i++) {
            a.record(new byte[8]);
        }
        Report.Delivery d = DeliveryLog.summarize(new long[] {10}, List.of(new DeliveryLog.Seen(8, a)), false);
        assertEquals(2, d.lost());
        assertNull(d.duplicated());
        assertNull(d.reordered());
        assertEquals("count", d.accounting());
    }

    @Test
    void stampsCarrySequenceThenPublisherLittleEndian() {
        byte[] p = Stamp.payload(16, 0x0102030405060708L, 3);
        assertEquals(0x08, p[0]);
        assertEquals(0x01, p[7]);
        assertEquals(3, p[8]);
        assertEquals(0, p[15]);
        assertEquals(0x0102030405060708L, Stamp.seq(p));
        assertEquals(3, Stamp.publisher(p));
        assertEquals(8, Stamp.payload(8, 1, 1).length);
    }
}
