// The request loop, for core requests and JetStream publishes alike: `op(payload)` returns a
// promise of the reply (or PubAck). Closed loop (rate 0): `inFlight` lanes, each awaiting its
// reply before sending the next, so exactly `inFlight` are outstanding. Open loop (rate > 0):
// requests are due on the schedule and sent without waiting for replies, at most `inFlight`
// outstanding; one held back by a full window is sent late, and its corrected latency (from
// when it was due) shows it.
import { now, waitUntil, yieldToLoop } from "../clock.js";

/**
 * Replies normally arrive through I/O, which lets the event loop run; failures that reject at
 * once (a closed connection) would not, so every loop also yields after this many sends.
 */
const YIELD_EVERY = 256;

/** One client's counts, kept current for progress lines. */
export class RequestStats {
  sent = 0;
  ok = 0;
  failed = 0;
  firstNs = null;
  lastSendNs = null;
  lastReplyNs = null;
}

/**
 * Runs one client's requests. `onReply(reply, dueNs, sentNs, recvNs)` and `onError(err)` hear
 * every outcome. Resolves when no request is outstanding any more; every request carries the
 * library's own timeout, so that is bounded.
 */
export function runRequests(opts) {
  return opts.rate > 0 ? openLoop(opts) : closedLoop(opts);
}

function sendable({ ctl, msgs, stats }) {
  return !ctl.stopped && (msgs === null || stats.sent < msgs);
}

function noteSend(stats, t) {
  if (stats.sent === 0) stats.firstNs = t;
  stats.lastSendNs = t;
  stats.sent += 1;
}

/** The library call; a synchronous throw becomes a rejection. */
function call(op, payload) {
  try {
    return op(payload);
  } catch (err) {
    return Promise.reject(err);
  }
}

function settleOne(promise, stats, dueNs, sentNs, onReply, onError) {
  return promise.then(
    (reply) => {
      const recv = now();
      stats.ok += 1;
      stats.lastReplyNs = recv;
      onReply(reply, dueNs ?? sentNs, sentNs, recv);
    },
    (err) => {
      stats.failed += 1;
      onError(err);
    },
  );
}

async function closedLoop(opts) {
  const { op, id, payloads, endNs, inFlight, stats, onReply, onError } = opts;
  const lane = async () => {
    while (sendable(opts)) {
      const t = now();
      if (endNs !== null && t >= endNs) break;
      const seq = stats.sent;
      noteSend(stats, t);
      await settleOne(call(op, payloads.make(seq, id)), stats, null, t, onReply, onError);
      if (stats.sent % YIELD_EVERY === 0) await yieldToLoop();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}

async function openLoop(opts) {
  const { op, id, payloads, ctl, endNs, inFlight, rate, phaseNs, stats, onReply, onError } = opts;
  const intervalNs = 1e9 / rate;
  let outstanding = 0;
  let wake = null;
  const freed = () => {
    outstanding -= 1;
    if (wake !== null) {
      const w = wake;
      wake = null;
      w();
    }
  };
  const slot = () => new Promise((resolve) => (wake = resolve));
  while (sendable(opts)) {
    const seq = stats.sent;
    const due = ctl.startNs + phaseNs + Math.floor(seq * intervalNs);
    if (endNs !== null && due >= endNs) break;
    if (!(await waitUntil(due, ctl))) break;
    // A full window holds the next request back until a reply (or timeout) frees a slot.
    while (outstanding >= inFlight) await slot();
    if (ctl.stopped) break;
    const t = now();
    noteSend(stats, t);
    outstanding += 1;
    settleOne(call(op, payloads.make(seq, id)), stats, due, t, onReply, onError).finally(freed);
    if (stats.sent % YIELD_EVERY === 0) await yieldToLoop();
  }
  while (outstanding > 0) await slot();
}
