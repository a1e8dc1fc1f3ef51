// Payloads for the senders. Both clients queue a reference to the payload until their next
// flush, so a stamped payload cannot be reused: each message gets its own view, carved out of
// a zero-filled slab (one allocation per 64 KiB instead of one per message). Unstamped
// payloads never change, so one buffer serves every message.
import { STAMP_BYTES, writeStamp } from "./stamp.js";

const SLAB_BYTES = 64 * 1024;

export class Payloads {
  #slab = null;
  #used = 0;

  constructor(size) {
    this.size = size;
    this.stamped = size >= STAMP_BYTES;
    this.fixed = this.stamped ? null : new Uint8Array(size);
  }

  /** The payload of message `seq` of publisher `publisher`. */
  make(seq, publisher) {
    if (!this.stamped) return this.fixed;
    if (this.#slab === null || this.#used + this.size > this.#slab.length) {
      this.#slab = new Uint8Array(Math.max(SLAB_BYTES, this.size));
      this.#used = 0;
    }
    const view = this.#slab.subarray(this.#used, this.#used + this.size);
    this.#used += this.size;
    writeStamp(view, seq, publisher);
    return view;
  }
}
