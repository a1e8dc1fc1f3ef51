// js_pub: publish into a stream msgbench created, each publish acknowledged. sync: await each
// PubAck before the next (one outstanding). async: the library's publish is already
// promise-based, so "async" keeps `in_flight` publishes outstanding, a new one starting as each
// is acknowledged (a sliding window; the docs' batch-then-Promise.all would let the window run
// dry at every batch end). Each PubAck is timed from its publish.
import { Payloads } from "../load/payload.js";
import { RequestStats, runRequests } from "../load/requester.js";
import { AckSet } from "../stats/acks.js";
import { pubEntry } from "../stats/clients.js";
import { LatencyRecorder } from "../stats/latency.js";
import { closeAll, endOf, openConns, phaseOf, sum } from "./common.js";

export async function setup(ctx) {
  const { sc, client, errors } = ctx;
  errors.declare("request_timeout", "no_responders", "js_other");
  const conns = await openConns(ctx, Array.from({ length: sc.pubs }, (_, i) => `msgbench-js-pub-${i}`));
  const stats = conns.map(() => new RequestStats());
  const acks = new AckSet();
  const inFlight = sc.js.mode === "sync" ? 1 : sc.in_flight;

  return {
    counts: () => ({ sent: sum(stats, (s) => s.sent), received: acks.acked }),

    async run(ctl) {
      const payloads = new Payloads(sc.size);
      const recorder = new LatencyRecorder({ warmupUntilNs: ctl.startNs + sc.warmup_ms * 1e6, uncorrected: sc.rate > 0 });
      const endNs = endOf(sc, ctl);
      await Promise.all(
        conns.map((conn, id) =>
          runRequests({
            op: (payload) => conn.jsPublish(sc.subject, payload, sc.timeout_ms),
            id,
            payloads,
            ctl,
            msgs: sc.msgs,
            endNs,
            inFlight,
            rate: sc.rate / sc.pubs,
            phaseNs: phaseOf(sc, id),
            stats: stats[id],
            onReply: (pubAck, dueNs, sentNs, recvNs) => {
              recorder.record(dueNs, sentNs, recvNs);
              acks.add(pubAck.seq);
            },
            onError: (err) => errors.add(client.classify(err, { js: true })),
          }),
        ),
      );
      const sent = sum(stats, (s) => s.sent);
      return {
        interrupted: ctl.interrupted,
        clients: stats.map((s, id) =>
          pubEntry(id, { msgs: s.sent, bytes: s.sent * sc.size, firstNs: s.firstNs, lastNs: s.lastSendNs }),
        ),
        delivery: { sent, received: 0, lost: 0, duplicated: null, reordered: null, accounting: "none" },
        errors: errors.toJSON(),
        ...recorder.sections(),
        js: acks.toJSON(),
      };
    },

    close: () => closeAll(conns),
  };
}
