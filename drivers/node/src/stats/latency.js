// Every reply or delivery timed twice on one clock: from when it was due by the schedule
// (corrected, coordinated-omission free) and from when it was actually sent (uncorrected).
import { newHistogram, recordNs, section } from "./hdr.js";

export class LatencyRecorder {
  /** Deliveries due during the warm-up: counted elsewhere, not recorded. */
  skipped = 0;
  /** Deliveries whose send time was no longer known. */
  unknownSend = 0;

  /**
   * `warmupUntilNs`: anything due before it is not recorded. `uncorrected`: keep the second
   * histogram (open loop only; closed loop has no schedule, so its one latency is the round trip).
   */
  constructor({ warmupUntilNs, uncorrected }) {
    this.warmupUntilNs = warmupUntilNs;
    this.corrected = newHistogram();
    this.uncorrected = uncorrected ? newHistogram() : null;
  }

  /** All times in ns on the driver's clock; `sentNs` null when unknown. */
  record(dueNs, sentNs, recvNs) {
    if (dueNs < this.warmupUntilNs) {
      this.skipped += 1;
      return;
    }
    recordNs(this.corrected, recvNs - dueNs);
    if (this.uncorrected === null) return;
    if (sentNs === null) this.unknownSend += 1;
    else recordNs(this.uncorrected, recvNs - sentNs);
  }

  /** {latency, latency_uncorrected?} for the result. */
  sections() {
    const out = { latency: section(this.corrected) };
    if (this.uncorrected !== null) out.latency_uncorrected = section(this.uncorrected);
    return out;
  }
}
