// The publish loop: the library's buffered publish, as fast as it goes (rate 0) or on an
// open-loop schedule (rate > 0: message n due at start + phase + n / rate, sent late rather
// than skipped when behind).
import { now, waitUntil, yieldToLoop } from "../clock.js";

/**
 * Yield to the event loop after this many messages or bytes. All clients of a run share one
 * event loop: a publisher that never awaited would keep subscribers (and stdin) from running
 * until it was done, and its whole run would pile up in memory. Yielding via setImmediate lets
 * one pass of the loop run every ready I/O callback; at 256 messages / 256 KiB that is well
 * under a millisecond of publishing, so `stop` is seen at once and the cost stays negligible.
 */
const YIELD_MSGS = 256;
const YIELD_BYTES = 256 * 1024;
/** Without a rate, the clock is read (for duration_ms) every this many messages. */
const CLOCK_EVERY = 64;

/**
 * Publishes until `msgs` are sent, `endNs` is reached, or the run stops. `counter.sent` is kept
 * current for progress lines. `onSend(seq, ns)`, if given, hears each message's send time.
 * Returns {msgs, bytes, firstNs, lastNs}: the publisher's span is its first to last send.
 */
export async function publishLoop({ conn, subject, id, payloads, ctl, msgs, endNs, rate, phaseNs, counter, onSend }) {
  const intervalNs = rate > 0 ? 1e9 / rate : 0;
  const size = payloads.size;
  const yieldEvery = Math.max(1, Math.min(YIELD_MSGS, Math.floor(YIELD_BYTES / Math.max(1, size))));
  let seq = 0;
  let untilYield = yieldEvery;
  let firstNs = null;
  let lastNs = null;
  let published = false; // since lastNs was taken
  while (!ctl.stopped && (msgs === null || seq < msgs)) {
    if (intervalNs > 0) {
      const due = ctl.startNs + phaseNs + Math.floor(seq * intervalNs);
      if (endNs !== null && due >= endNs) break;
      if (!(await waitUntil(due, ctl))) break;
    } else if (endNs !== null && seq % CLOCK_EVERY === 0 && now() >= endNs) {
      break;
    }
    const payload = payloads.make(seq, id);
    if (onSend !== undefined) {
      const t = now();
      if (seq === 0) firstNs = t;
      onSend(seq, t);
    } else if (seq === 0) {
      firstNs = now();
    }
    conn.publish(subject, payload);
    seq += 1;
    counter.sent = seq;
    published = true;
    untilYield -= 1;
    if (untilYield === 0 && (msgs === null || seq < msgs)) {
      untilYield = yieldEvery;
      lastNs = now();
      published = false;
      await yieldToLoop();
    }
  }
  if (published) lastNs = now();
  return { msgs: seq, bytes: seq * size, firstNs, lastNs };
}
