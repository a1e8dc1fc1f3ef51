// pubsub: `subs` subscriber connections, `pubs` publisher connections; publishers use the
// library's buffered publish and flush once at the end; subscribers check the stamps.
import { now } from "../clock.js";
import { publishLoop } from "../load/publisher.js";
import { Payloads } from "../load/payload.js";
import { readStamp } from "../load/stamp.js";
import { drainBudgetMs, settle } from "../run/settle.js";
import { pubEntry, subEntry } from "../stats/clients.js";
import { DeliveryLog, summarize } from "../stats/delivery.js";
import { closeAll, endOf, flushAll, openConns, phaseOf, sum } from "./common.js";

export async function setup(ctx) {
  const { sc } = ctx;
  const logs = Array.from({ length: sc.subs }, () => new DeliveryLog(sc.pubs));
  const subConns = await openConns(ctx, logs.map((_, i) => `msgbench-sub-${i}`));
  let pubConns = [];
  try {
    subConns.forEach((conn, i) => {
      const log = logs[i];
      conn.subscribe(sc.subject, (data) => {
        log.received += 1;
        log.bytes += data.length;
        log.lastNs = now();
        log.record(readStamp(data));
      });
    });
    // Interest must be in place at the server before anything is published.
    if (!(await flushAll(subConns, sc.timeout_ms))) throw new Error("subscriptions were not confirmed");
    pubConns = await openConns(ctx, Array.from({ length: sc.pubs }, (_, i) => `msgbench-pub-${i}`));
  } catch (err) {
    await closeAll(subConns);
    throw err;
  }
  const counters = pubConns.map(() => ({ sent: 0 }));

  return {
    counts: () => ({ sent: sum(counters, (c) => c.sent), received: sum(logs, (l) => l.received) }),

    async run(ctl) {
      const payloads = new Payloads(sc.size);
      const endNs = endOf(sc, ctl);
      const perPub = sc.rate / sc.pubs;
      const pubs = await Promise.all(
        pubConns.map((conn, id) =>
          publishLoop({
            conn,
            subject: sc.subject,
            id,
            payloads,
            ctl,
            msgs: sc.msgs,
            endNs,
            rate: perPub,
            phaseNs: phaseOf(sc, id),
            counter: counters[id],
          }),
        ),
      );
      // The one flush: everything buffered goes out, and the server has seen it all.
      await flushAll(pubConns, drainBudgetMs(ctl, sc.timeout_ms));
      const sent = pubs.map((p) => p.msgs);
      const total = sum(sent, (n) => n);
      await settle({
        done: () => logs.every((l) => l.received >= total),
        progress: () => sum(logs, (l) => l.received),
        idleMs: sc.timeout_ms,
        timeoutMs: sc.timeout_ms,
        ctl,
      });
      return {
        interrupted: ctl.interrupted,
        clients: [
          ...pubs.map((p, id) => pubEntry(id, p)),
          ...logs.map((l, id) =>
            subEntry(id, { msgs: l.received, bytes: l.bytes, startNs: ctl.startNs, lastNs: l.lastNs }),
          ),
        ],
        delivery: summarize(logs, sent),
        errors: ctx.errors.toJSON(),
      };
    },

    close: () => closeAll([...pubConns, ...subConns]),
  };
}
