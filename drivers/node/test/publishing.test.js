// The publishing side's pieces on their own: what a publisher stamps and sends (stamps,
// payloads) and what comes back from JetStream (acknowledgements).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Payloads } from "../src/load/payload.js";
import { readSeq, readStamp, writeStamp } from "../src/load/stamp.js";
import { AckSet } from "../src/stats/acks.js";

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
