// The accounting pieces on their own: the sequence window (the cases msgbench's own
// delivery.rs tests), the delivery summary, stamps, payloads, acknowledgements.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Payloads } from "../src/load/payload.js";
import { readSeq, readStamp, writeStamp } from "../src/load/stamp.js";
import { AckSet } from "../src/stats/acks.js";
import { DeliveryLog, SeqTracker, summarize, WINDOW } from "../src/stats/delivery.js";

const counts = (t) => [t.unique, t.duplicated, t.reordered];

test("an in-order stream is clean", () => {
  const t = new SeqTracker();
  for (let s = 0; s < 100_000; s++) t.record(s);
  assert.deepEqual(counts(t), [100_000, 0, 0]);
  assert.equal(t.next, 100_000);
});

test("gaps, duplicates and late arrivals", () => {
  const t = new SeqTracker();
  for (const s of [0, 1, 2, 5, 5, 3, 2, 7]) t.record(s);
  assert.deepEqual(counts(t), [6, 2, 1]);
  t.record(4); // never seen: late, not a duplicate
  assert.deepEqual(counts(t), [7, 2, 2]);
});

test("window slots are reused correctly after jumps", () => {
  let t = new SeqTracker();
  t.record(3);
  t.record(3 + 2 * WINDOW);
  t.record(3 + WINDOW + 1);
  assert.deepEqual(counts(t), [3, 0, 1]);
  t = new SeqTracker();
  t.record(10);
  t.record(10 + WINDOW - 1);
  t.record(10 + WINDOW + 5);
  t.record(10 + WINDOW);
  assert.deepEqual([t.duplicated, t.reordered], [0, 1]);
  t.record(10 + WINDOW - 1);
  assert.equal(t.duplicated, 1);
  t.record(5); // older than the window
  assert.deepEqual([t.beyondWindow, t.reordered], [1, 2]);
});

function logOf(pubs, stamps) {
  const log = new DeliveryLog(pubs);
  for (const s of stamps) {
    log.received += 1;
    log.record(s === null ? null : { publisher: s[0], seq: s[1] });
  }
  return log;
}

test("summary: exact, with loss, a duplicate and a late arrival", () => {
  const range = (n) => Array.from({ length: n }, (_, i) => i);
  const a = logOf(2, range(10).flatMap((s) => [[0, s], [1, s]]));
  const b = logOf(2, [
    ...range(10).filter((s) => s < 3 || s > 4).map((s) => [0, s]),
    ...[0, 1, 2, 2, 3, 4, 6, 7, 5, 8, 9].map((s) => [1, s]),
  ]);
  assert.deepEqual(summarize([a, b], [10, 10]), {
    sent: 20, received: 39, lost: 2, duplicated: 1, reordered: 1, accounting: "exact",
  });
});

test("summary: a publisher never heard from is all lost", () => {
  const a = logOf(2, [0, 1, 2, 3, 4].map((s) => [0, s]));
  assert.equal(summarize([a], [5, 7]).lost, 7);
});

test("summary: unstamped falls back to counts, unknown duplicates", () => {
  const a = logOf(1, Array(8).fill(null));
  assert.deepEqual(summarize([a], [10]), {
    sent: 10, received: 8, lost: 2, duplicated: null, reordered: null, accounting: "count",
  });
});

test("summary: a stamp from a publisher the run does not have makes it count-only", () => {
  const a = logOf(1, [[0, 0], [3, 0]]);
  assert.equal(summarize([a], [1]).accounting, "count");
});

test("summary: no subscribers, nothing to account", () => {
  assert.deepEqual(summarize([], [4]), {
    sent: 4, received: 0, lost: 0, duplicated: null, reordered: null, accounting: "none",
  });
});

test("stamps: little-endian u64 sequence and publisher", () => {
  const b = new Uint8Array(16);
  writeStamp(b, 2 ** 40 + 258, 7);
  assert.deepEqual([...b.subarray(0, 8)], [2, 1, 0, 0, 0, 1, 0, 0]);
  assert.deepEqual([...b.subarray(8, 16)], [7, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(readStamp(b), { seq: 2 ** 40 + 258, publisher: 7 });
  assert.equal(readSeq(b), 2 ** 40 + 258);
  assert.equal(readStamp(new Uint8Array(15)), null);
  b[15] = 0xff; // a publisher index no JS number holds: not ours
  assert.equal(readStamp(b), null);
});

test("payloads: stamped ones are distinct views, small ones shared", () => {
  const p = new Payloads(32);
  const x = p.make(0, 1);
  const y = p.make(1, 1);
  assert.notEqual(x.buffer === y.buffer && x.byteOffset === y.byteOffset, true);
  assert.deepEqual([readStamp(x), readStamp(y)], [{ seq: 0, publisher: 1 }, { seq: 1, publisher: 1 }]);
  assert.equal(x.length, 32);
  const big = new Payloads(100_000);
  assert.equal(big.make(3, 0).length, 100_000);
  const small = new Payloads(8);
  assert.equal(small.make(0, 0), small.make(1, 0));
});

test("acks: range, duplicates, out of order, far apart", () => {
  const a = new AckSet();
  for (const s of [5000, 5002, 5001, 5002, 3, 200_000, 3]) a.add(s);
  assert.deepEqual(a.toJSON(), { acked: 7, first_seq: 3, last_seq: 200_000, duplicate_acks: 2 });
  assert.deepEqual(new AckSet().toJSON(), { acked: 0, first_seq: 0, last_seq: 0, duplicate_acks: 0 });
});
