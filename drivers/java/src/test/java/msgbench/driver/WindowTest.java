package msgbench.driver;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WindowTest {
    private static RunContext ctx() throws Exception {
        ObjectMapper m = new ObjectMapper();
        var s = ((com.fasterxml.jackson.databind.node.ObjectNode) m.readTree(SpecFiles.specDir()
                .resolve("vectors/scenarios/request_closed.json").toFile()).get("scenario"))
                .put("subject", "x");
        return new RunContext(Scenario.parse(m, m.writeValueAsString(s)));
    }

    @Test
    void limitsOutstandingAndTimesOutTheOldest() throws Exception {
        RunContext ctx = ctx();
        Window w = new Window(2, 200_000_000);
        Window.Slot a = w.acquire(0, -1, ctx);
        Window.Slot b = w.acquire(1, -1, ctx);
        assertEquals(2, w.outstanding());
        assertTrue(w.complete(b));
        assertFalse(w.complete(b), "settled once");
        Thread.sleep(100); // so that 2 expires well after a
        assertNotNull(w.acquire(2, -1, ctx));
        assertNotNull(w.acquire(3, -1, ctx)); // waits for a to expire
        assertEquals(1, w.timeouts());
        assertFalse(w.complete(a), "a late answer does not count");
        w.awaitEmpty(System.nanoTime() + 1_000_000_000L);
        assertEquals(0, w.outstanding());
        assertEquals(3, w.timeouts());
    }

    @Test
    void stopEndsAWaitForASlot() throws Exception {
        RunContext ctx = ctx();
        Window w = new Window(1, 60_000_000_000L);
        assertNotNull(w.acquire(0, -1, ctx));
        ctx.requestStop();
        assertNull(w.acquire(1, -1, ctx));
    }
}
