// Latency histograms: hdr-histogram-js, in nanoseconds from 1 ns to one hour, 3 significant
// digits, shipped as base64 of the V2 deflate-compressed encoding.
//
// The plain JS implementation, with 64-bit (Float64Array) counts: `build` only loads the WASM
// one on request, and that one needs an async instantiation of an embedded module at startup
// and explicit `destroy()` calls; the JS one records a few million values a second, far more
// than a driver delivers, and its counts cannot overflow (exact to 2^53).
import zlib from "node:zlib";
import hdr from "hdr-histogram-js";

export const MAX_NS = 3_600_000_000_000;

const V2_COOKIE = 0x1c849313;
const V2_COMPRESSED_COOKIE = 0x1c849314;
const HEADER_BYTES = 40;

export function newHistogram() {
  return hdr.build({
    bitBucketSize: 64,
    autoResize: false,
    lowestDiscernibleValue: 1,
    highestTrackableValue: MAX_NS,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });
}

/** Records one latency, saturating: below 1 ns counts as 1, above an hour as an hour. */
export function recordNs(histogram, ns) {
  histogram.recordValue(ns < 1 ? 1 : ns > MAX_NS ? MAX_NS : Math.round(ns));
}

/**
 * The uncompressed V2 encoding of a histogram, as the reference implementations write it.
 * hdr-histogram-js writes two header fields differently from HdrHistogram (Java) and the
 * `hdrhistogram` crate msgbench decodes with: normalizingIndexOffset as 1 (the others: 0) and
 * integerToDoubleValueConversionRatio as the integer 1 instead of the double 1.0. The crate
 * rejects both ("unsupported feature"), so they are set to the reference values here; the
 * counts payload is the library's own.
 */
export function v2Bytes(histogram) {
  const packed = Buffer.from(hdr.encodeIntoCompressedBase64(histogram), "base64");
  const raw = zlib.inflateSync(packed.subarray(8, 8 + packed.readUInt32BE(4)));
  if (raw.readUInt32BE(0) !== V2_COOKIE || raw.length < HEADER_BYTES) {
    throw new Error("hdr-histogram-js wrote an unexpected encoding");
  }
  raw.writeUInt32BE(0, 8);
  raw.writeDoubleBE(1.0, 32);
  return raw;
}

/** base64 of the V2 compressed encoding (cookie 0x1c849314, big-endian length, zlib data). */
export function encodeBase64(histogram) {
  const deflated = zlib.deflateSync(v2Bytes(histogram));
  const out = Buffer.alloc(8 + deflated.length);
  out.writeUInt32BE(V2_COMPRESSED_COOKIE, 0);
  out.writeUInt32BE(deflated.length, 4);
  deflated.copy(out, 8);
  return out.toString("base64");
}

export function decodeBase64(text) {
  return hdr.decodeFromCompressedBase64(text, 64, false);
}

/** [highest equivalent value, count] for every non-empty bucket, lowest first. */
export function recordedBuckets(histogram) {
  const out = [];
  const it = histogram.recordedValuesIterator;
  it.reset();
  for (let guard = 0; it.hasNext() && guard < histogram.countsArrayLength; guard++) {
    const v = it.next();
    out.push([v.valueIteratedTo, v.countAtValueIteratedTo]);
  }
  return out;
}

/** The result section for one histogram: {count, hdr}. */
export function section(histogram) {
  return { count: histogram.totalCount, hdr: encodeBase64(histogram) };
}
