// spec/vectors/hdr: decode the compressed form to exactly the listed buckets; build from the
// values, encode, decode: same buckets; and the uncompressed V2 bytes against `v2_base64`.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import zlib from "node:zlib";
import hdr from "hdr-histogram-js";
import { decodeBase64, encodeBase64, MAX_NS, newHistogram, recordedBuckets, recordNs, v2Bytes } from "../src/stats/hdr.js";
import { HDR_VECTORS } from "./helpers/paths.js";

const vectors = readdirSync(HDR_VECTORS)
  .filter((f) => f.endsWith(".json"))
  .map((f) => JSON.parse(readFileSync(path.join(HDR_VECTORS, f), "utf8")));

function fromValues(values) {
  const h = newHistogram();
  for (const [value, count] of values) h.recordValueWithCount(value, count);
  return h;
}

test("there are hdr vectors", () => assert.ok(vectors.length >= 3));

for (const v of vectors) {
  test(`hdr ${v.name}: the bounds are the protocol's`, () => {
    assert.equal(v.lowest_discernible, 1);
    assert.equal(v.highest_trackable, MAX_NS);
    assert.equal(v.significant_digits, 3);
  });

  test(`hdr ${v.name}: decoding the compressed form gives the listed buckets`, () => {
    const h = decodeBase64(v.v2_compressed_base64);
    assert.deepEqual(recordedBuckets(h), v.recorded_buckets);
    assert.equal(h.totalCount, v.total_count);
    assert.equal(h.maxValue === 0 ? 0 : h.highestEquivalentValue(h.maxValue), v.max);
  });

  test(`hdr ${v.name}: built from the values, encoded and decoded, same buckets`, () => {
    const back = decodeBase64(encodeBase64(fromValues(v.values)));
    assert.deepEqual(recordedBuckets(back), v.recorded_buckets);
    assert.equal(back.totalCount, v.total_count);
  });

  test(`hdr ${v.name}: the uncompressed V2 bytes equal v2_base64`, () => {
    assert.equal(v2Bytes(fromValues(v.values)).toString("base64"), v.v2_base64);
    // And the vector's own compressed form holds exactly those bytes.
    const packed = Buffer.from(v.v2_compressed_base64, "base64");
    const inner = zlib.inflateSync(packed.subarray(8, 8 + packed.readUInt32BE(4)));
    assert.equal(inner.toString("base64"), v.v2_base64);
  });

  test(`hdr ${v.name}: what the library writes by itself differs only in two header fields`, () => {
    // Why v2Bytes() patches the header: hdr-histogram-js writes normalizingIndexOffset 1 and the
    // conversion ratio as an integer; the counts payload is byte for byte the reference one.
    const packed = Buffer.from(hdr.encodeIntoCompressedBase64(fromValues(v.values)), "base64");
    const own = zlib.inflateSync(packed.subarray(8, 8 + packed.readUInt32BE(4)));
    const ref = Buffer.from(v.v2_base64, "base64");
    assert.equal(own.length, ref.length);
    assert.deepEqual(own.subarray(40), ref.subarray(40), "counts payload");
    assert.deepEqual(own.subarray(0, 8), ref.subarray(0, 8), "cookie and payload length");
    assert.deepEqual(own.subarray(12, 32), ref.subarray(12, 32), "digits, lowest, highest");
    assert.equal(own.readUInt32BE(8), 1);
    assert.equal(ref.readUInt32BE(8), 0);
    assert.equal(ref.readDoubleBE(32), 1.0);
  });
}

test("hdr: recording saturates at 1 ns and one hour", () => {
  const h = newHistogram();
  recordNs(h, 0);
  recordNs(h, -5);
  recordNs(h, MAX_NS * 10);
  const buckets = recordedBuckets(decodeBase64(encodeBase64(h)));
  assert.deepEqual(buckets, [
    [1, 2],
    [h.highestEquivalentValue(MAX_NS), 1],
  ]);
});

test("hdr: an empty histogram encodes to the empty vector's bytes", () => {
  const empty = vectors.find((v) => v.name === "empty");
  assert.equal(v2Bytes(newHistogram()).toString("base64"), empty.v2_base64);
});
