// latency: one publisher at `rate`, open loop (message n due at start + n / rate), one
// subscriber on its own connection to the same server. Each delivery is timed from its due
// time (corrected) and from its actual send time (uncorrected), on one monotonic clock.
import { now } from "../clock.js";
import { publishLoop } from "../load/publisher.js";
import { Payloads } from "../load/payload.js";
import { readSeq } from "../load/stamp.js";
import { drainBudgetMs, settle } from "../run/settle.js";
import { pubEntry, subEntry } from "../stats/clients.js";
import { SeqTracker } from "../stats/delivery.js";
import { LatencyRecorder } from "../stats/latency.js";
import { closeAll, endOf, flushAll, openConns } from "./common.js";

/** Send times of the last 2^k messages, k chosen for at least 4 s in flight (like msgbench). */
class SendTimes {
  constructor(rate) {
    let slots = 1 << 16;
    while (slots < rate * 4 && slots < 1 << 22) slots *= 2;
    this.mask = slots - 1;
    this.seqs = new Float64Array(slots).fill(-1);
    this.times = new Float64Array(slots);
  }

  put(seq, ns) {
    const i = seq & this.mask;
    this.seqs[i] = seq;
    this.times[i] = ns;
  }

  get(seq) {
    const i = seq & this.mask;
    return this.seqs[i] === seq ? this.times[i] : null;
  }
}

export async function setup(ctx) {
  const { sc } = ctx;
  const [subConn] = await openConns(ctx, ["msgbench-latency-sub"]);
  let pubConn;
  const sub = { received: 0, bytes: 0, lastNs: null, tracker: new SeqTracker(), foreign: 0 };
  const payloads = new Payloads(sc.size);
  const sendTimes = new SendTimes(sc.rate);
  const intervalNs = 1e9 / sc.rate;
  let recorder = null;
  let startNs = 0;
  try {
    subConn.subscribe(sc.subject, (data) => {
      const recv = now();
      // Stamped payloads name their message; below 16 bytes NATS's per-connection order does.
      const seq = !payloads.stamped ? sub.received : data.length >= payloads.size ? readSeq(data) : -1;
      sub.received += 1;
      sub.bytes += data.length;
      sub.lastNs = recv;
      if (recorder === null || seq < 0) {
        sub.foreign += 1;
        return;
      }
      sub.tracker.record(seq);
      recorder.record(startNs + Math.floor(seq * intervalNs), sendTimes.get(seq), recv);
    });
    if (!(await flushAll([subConn], sc.timeout_ms))) throw new Error("the subscription was not confirmed");
    [pubConn] = await openConns(ctx, ["msgbench-latency-pub"]);
  } catch (err) {
    await closeAll([subConn]);
    throw err;
  }
  const counter = { sent: 0 };

  return {
    counts: () => ({ sent: counter.sent, received: sub.received }),

    async run(ctl) {
      startNs = ctl.startNs;
      recorder = new LatencyRecorder({ warmupUntilNs: startNs + sc.warmup_ms * 1e6, uncorrected: true });
      const pub = await publishLoop({
        conn: pubConn,
        subject: sc.subject,
        id: 0,
        payloads,
        ctl,
        msgs: sc.msgs,
        endNs: endOf(sc, ctl),
        rate: sc.rate,
        phaseNs: 0,
        counter,
        onSend: (seq, ns) => sendTimes.put(seq, ns),
      });
      await flushAll([pubConn], drainBudgetMs(ctl, sc.timeout_ms));
      await settle({
        done: () => sub.received >= pub.msgs,
        progress: () => sub.received,
        idleMs: sc.timeout_ms,
        timeoutMs: sc.timeout_ms,
        ctl,
      });
      const t = sub.tracker;
      const exact = payloads.stamped && sub.foreign === 0;
      const delivery = exact
        ? { sent: pub.msgs, received: sub.received, lost: Math.max(0, pub.msgs - t.unique), duplicated: t.duplicated, reordered: t.reordered, accounting: "exact" }
        : { sent: pub.msgs, received: sub.received, lost: Math.max(0, pub.msgs - sub.received), duplicated: null, reordered: null, accounting: "count" };
      return {
        interrupted: ctl.interrupted,
        clients: [pubEntry(0, pub), subEntry(0, { msgs: sub.received, bytes: sub.bytes, startNs, lastNs: sub.lastNs })],
        delivery,
        errors: ctx.errors.toJSON(),
        ...recorder.sections(),
      };
    },

    close: () => closeAll([pubConn, subConn]),
  };
}
