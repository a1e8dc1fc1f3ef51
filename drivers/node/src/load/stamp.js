// The driver protocol's stamp: bytes 0..8 the sequence number, bytes 8..16 the publisher's index,
// both little-endian u64, in payloads of 16 bytes or more. JS numbers hold them exactly below 2^53.

export const STAMP_BYTES = 16;
const TWO_32 = 2 ** 32;
/** High words at or above this would not fit a JS number exactly: not one of ours. */
const HIGH_LIMIT = 2 ** 21;

function writeU64(buf, at, value) {
  const lo = value >>> 0;
  const hi = Math.floor(value / TWO_32);
  buf[at] = lo;
  buf[at + 1] = lo >>> 8;
  buf[at + 2] = lo >>> 16;
  buf[at + 3] = lo >>> 24;
  buf[at + 4] = hi;
  buf[at + 5] = hi >>> 8;
  buf[at + 6] = hi >>> 16;
  buf[at + 7] = hi >>> 24;
}

const u32 = (b, at) => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;

/** Reads a u64 that fits a JS number, or returns -1. */
function readU64(buf, at) {
  const hi = u32(buf, at + 4);
  return hi >= HIGH_LIMIT ? -1 : hi * TWO_32 + u32(buf, at);
}

export function writeStamp(buf, seq, publisher) {
  writeU64(buf, 0, seq);
  writeU64(buf, 8, publisher);
}

/** The sequence number alone (bytes 0..8), or -1. */
export const readSeq = (buf) => readU64(buf, 0);

/** {seq, publisher} from a stamped payload; null when too short (or not a stamp). */
export function readStamp(buf) {
  if (buf.length < STAMP_BYTES) return null;
  const seq = readU64(buf, 0);
  const publisher = readU64(buf, 8);
  return seq < 0 || publisher < 0 ? null : { seq, publisher };
}
