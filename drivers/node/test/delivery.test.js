// Delivery accounting (src/stats/delivery.js): the sequence window (the cases msgbench's own
// delivery.rs tests), the delivery summary, and every spec/vectors/delivery file.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { readStamp, writeStamp } from "../src/load/stamp.js";
import { DeliveryLog, SeqTracker, summarize, WINDOW } from "../src/stats/delivery.js";
import { DELIVERY_VECTORS } from "./helpers/paths.js";

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

// spec/vectors/delivery: each file's arrivals, stamped and read back as a subscriber does, into
// one DeliveryLog; the summary and every publisher's tracker must come to the expected counts.
const vectors = readdirSync(DELIVERY_VECTORS)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => ({ file: f, ...JSON.parse(readFileSync(path.join(DELIVERY_VECTORS, f), "utf8")) }));

test("there are delivery vectors", () => assert.ok(vectors.length >= 8));

for (const v of vectors) {
  test(`delivery ${v.name}`, () => {
    assert.equal(`${v.name}.json`, v.file);
    const log = new DeliveryLog(v.sent.length);
    for (const [publisher, seq] of v.arrivals) {
      const payload = new Uint8Array(16);
      writeStamp(payload, seq, publisher);
      log.received += 1;
      log.record(readStamp(payload));
    }
    assert.equal(log.foreign, 0, "an arrival outside the vector's publishers");
    const { publishers, unique, ...section } = v.expect;
    assert.deepEqual(summarize([log], v.sent), section);
    assert.equal(log.trackers.reduce((a, t) => a + t.unique, 0), unique);
    // Per publisher, as msgbench counts it: received = unique + duplicated, lost = sent - unique.
    assert.deepEqual(
      log.trackers.map((t, id) => ({
        id,
        sent: v.sent[id],
        received: t.unique + t.duplicated,
        unique: t.unique,
        lost: Math.max(0, v.sent[id] - t.unique),
        duplicated: t.duplicated,
        reordered: t.reordered,
      })),
      publishers,
    );
  });
}
