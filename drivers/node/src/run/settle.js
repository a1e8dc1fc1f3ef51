// After the last send: wait for the deliveries still on their way, within limits.
import { NS_PER_MS, now, sleepMs } from "../clock.js";

/**
 * Polls until `done()` holds. Gives up when `progress()` (a count) has not moved for `idleMs`,
 * or, once the run was stopped, `timeoutMs` after the stop. Returns whether `done()` held.
 */
export async function settle({ done, progress, idleMs, timeoutMs, ctl }) {
  let last = progress();
  let lastChange = now();
  while (!done()) {
    const t = now();
    if (ctl.stopped && t - ctl.stopNs >= timeoutMs * NS_PER_MS) return false;
    const p = progress();
    if (p !== last) {
      last = p;
      lastChange = t;
    } else if (t - lastChange >= idleMs * NS_PER_MS) {
      return false;
    }
    await sleepMs(1);
  }
  return true;
}

/** What is left of the stop's drain allowance, or `timeoutMs` when not stopped. */
export function drainBudgetMs(ctl, timeoutMs) {
  if (!ctl.stopped) return timeoutMs;
  return Math.max(0, timeoutMs - (now() - ctl.stopNs) / NS_PER_MS);
}
