// The run's shared state: when it started, and whether msgbench asked it to stop.
import { now } from "../clock.js";

export class Control {
  stopped = false;
  stopNs = null;
  startNs = null;

  /** Marks the run's clock start: the moment `start` was read. */
  begin(startNs = now()) {
    this.startNs = startNs;
  }

  /** `stop` or EOF: every sender stops at its next check. */
  stop() {
    if (this.stopped) return;
    this.stopped = true;
    this.stopNs = now();
  }

  get interrupted() {
    return this.stopped;
  }
}
