// Delivery accounting from the stamps a subscriber saw, by the rules of msgbench's own engine
// (docs/scenarios.md "Delivery accounting", msgbench/src/stats/delivery.rs): per publisher, a
// sliding window of the last 8,192 sequence numbers tells a duplicate from a late arrival.
//
// The same pieces, by the same names, are in every driver: SeqTracker (one publisher at one
// subscriber), DeliveryLog (one subscriber) and summarize (the result's delivery section); each
// records with record. spec/vectors/delivery holds the sequences they must all count alike.

export const WINDOW = 8192;
const WORDS = WINDOW / 32;

/** What one subscriber saw of one publisher. */
export class SeqTracker {
  /** One past the highest sequence seen. */
  next = 0;
  /** Bit `s % WINDOW` is set when sequence s (within the window below `next`) was seen. */
  seen = new Uint32Array(WORDS);
  unique = 0;
  duplicated = 0;
  reordered = 0;
  beyondWindow = 0;

  record(seq) {
    if (seq >= this.next) {
      // Slots between the old high mark and seq now stand for newer, unseen sequences.
      if (seq - this.next >= WINDOW) this.seen.fill(0);
      else for (let s = this.next; s < seq; s++) this.#clear(s);
      this.#set(seq);
      this.next = seq + 1;
      this.unique += 1;
    } else if (this.next - seq > WINDOW) {
      this.beyondWindow += 1;
      this.reordered += 1;
      this.unique += 1;
    } else if (this.#has(seq)) {
      this.duplicated += 1;
    } else {
      this.#set(seq);
      this.unique += 1;
      this.reordered += 1;
    }
  }

  #has(seq) {
    const slot = seq % WINDOW;
    return (this.seen[slot >>> 5] & (1 << (slot & 31))) !== 0;
  }

  #set(seq) {
    const slot = seq % WINDOW;
    this.seen[slot >>> 5] |= 1 << (slot & 31);
  }

  #clear(seq) {
    const slot = seq % WINDOW;
    this.seen[slot >>> 5] &= ~(1 << (slot & 31));
  }
}

/** Everything one receiving connection counts: totals, and a tracker per publisher. */
export class DeliveryLog {
  received = 0;
  bytes = 0;
  /** Receive time of the last message, ns on the driver's clock. */
  lastNs = null;
  /** Messages without a stamp (payload under 16 bytes). */
  unstamped = 0;
  /** Stamped messages naming a publisher this run does not have. */
  foreign = 0;

  constructor(publishers) {
    this.trackers = Array.from({ length: publishers }, () => new SeqTracker());
  }

  /** Records a stamp (or its absence: stamp === null). */
  record(stamp) {
    if (stamp === null) {
      this.unstamped += 1;
      return;
    }
    const tracker = this.trackers[stamp.publisher];
    if (tracker === undefined) this.foreign += 1;
    else tracker.record(stamp.seq);
  }
}

/**
 * The result's `delivery` section for subscribers that each expect every message of every
 * publisher. `sent[p]` is what publisher p published.
 */
export function summarize(logs, sent) {
  const totalSent = sent.reduce((a, b) => a + b, 0);
  const received = logs.reduce((a, l) => a + l.received, 0);
  if (logs.length === 0) {
    return { sent: totalSent, received: 0, lost: 0, duplicated: null, reordered: null, accounting: "none" };
  }
  const stamped = logs.every((l) => l.unstamped === 0 && l.foreign === 0);
  if (!stamped) {
    const lost = logs.reduce((a, l) => a + Math.max(0, totalSent - l.received), 0);
    return { sent: totalSent, received, lost, duplicated: null, reordered: null, accounting: "count" };
  }
  let lost = 0;
  let duplicated = 0;
  let reordered = 0;
  for (const log of logs) {
    log.trackers.forEach((t, p) => {
      lost += Math.max(0, sent[p] - t.unique);
      duplicated += t.duplicated;
      reordered += t.reordered;
    });
  }
  return { sent: totalSent, received, lost, duplicated, reordered, accounting: "exact" };
}
