// JetStream acknowledgements: which stream sequences were acknowledged, and how often one was
// acknowledged twice. A bitmap over the sequences seen, one bit per sequence.

/** Room kept below the first sequence seen, for acks that arrive out of order. */
const SLACK = 8192;
const floor8 = (n) => n - (n % 8);

export class AckSet {
  acked = 0;
  duplicates = 0;
  first = null;
  last = null;
  #base = 0;
  #bits = new Uint8Array(0);

  add(seq) {
    this.acked += 1;
    if (this.first === null || seq < this.first) this.first = seq;
    if (this.last === null || seq > this.last) this.last = seq;
    this.#cover(seq);
    const i = seq - this.#base;
    const byte = Math.floor(i / 8);
    const mask = 1 << (i % 8);
    if (this.#bits[byte] & mask) this.duplicates += 1;
    else this.#bits[byte] |= mask;
  }

  /** Grows the bitmap so that it covers seq: down by moving the base, up by doubling. */
  #cover(seq) {
    if (this.#bits.length === 0) {
      this.#base = floor8(Math.max(0, seq - SLACK));
      this.#bits = new Uint8Array(4096);
    }
    if (seq < this.#base) {
      const base = floor8(Math.max(0, seq - SLACK));
      const grown = new Uint8Array(this.#bits.length + (this.#base - base) / 8);
      grown.set(this.#bits, (this.#base - base) / 8);
      this.#bits = grown;
      this.#base = base;
    }
    const need = Math.floor((seq - this.#base) / 8) + 1;
    if (need > this.#bits.length) {
      let bytes = this.#bits.length * 2;
      while (bytes < need) bytes *= 2;
      const grown = new Uint8Array(bytes);
      grown.set(this.#bits);
      this.#bits = grown;
    }
  }

  toJSON() {
    return { acked: this.acked, first_seq: this.first ?? 0, last_seq: this.last ?? 0, duplicate_acks: this.duplicates };
  }
}
