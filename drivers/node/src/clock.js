// One monotonic clock for everything the driver times: nanoseconds since the process began,
// from process.hrtime.bigint(), as plain numbers (exact up to 2^53 ns, about 104 days).
import { setImmediate as immediate, setTimeout as delay } from "node:timers/promises";

const ORIGIN = process.hrtime.bigint();

export const now = () => Number(process.hrtime.bigint() - ORIGIN);

export const NS_PER_MS = 1_000_000;

/**
 * Lets the event loop run once: setImmediate resolves in the loop's check phase, after the poll
 * phase has run every ready I/O callback (socket reads for subscribers on this process, stdin
 * for `stop`), so a busy publisher does not starve them.
 */
export const yieldToLoop = () => immediate();

export const sleepMs = (ms) => delay(ms);

/** Below this much time to go, waiting spins on the event loop instead of sleeping. */
const SPIN_NS = 2 * NS_PER_MS;
/** The longest single sleep, so a stop is seen within it. */
const MAX_SLEEP_MS = 50;

/**
 * Waits until `dueNs`: sleeps on a timer while more than 2 ms remain (timers are only
 * millisecond-accurate), then spins with setImmediate so I/O keeps flowing. Returns true when
 * due, false if the run was stopped meanwhile. A time already past returns at once: an open-loop
 * sender that falls behind sends immediately and never skips.
 */
export async function waitUntil(dueNs, ctl) {
  let left = dueNs - now();
  while (left > 0) {
    if (ctl.stopped) return false;
    if (left > SPIN_NS) await delay(Math.min(MAX_SLEEP_MS, Math.floor((left - SPIN_NS / 2) / NS_PER_MS)));
    else await immediate();
    left = dueNs - now();
  }
  return !ctl.stopped;
}

/** Resolves with the promise's value, or with `fallback` after `ms`. */
export async function within(promise, ms, fallback = undefined) {
  const timer = new AbortController();
  const timeout = delay(ms, fallback, { signal: timer.signal }).catch(() => fallback);
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    timer.abort();
  }
}
