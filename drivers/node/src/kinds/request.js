// request: `pubs` requester connections against msgbench's echo service (queue group
// `msgbench`). Closed loop with rate 0 (each client keeps `in_flight` requests outstanding),
// open loop with a rate (due on the schedule; latency corrected from the due time).
import { Payloads } from "../load/payload.js";
import { RequestStats, runRequests } from "../load/requester.js";
import { readStamp } from "../load/stamp.js";
import { pubEntry, subEntry } from "../stats/clients.js";
import { DeliveryLog } from "../stats/delivery.js";
import { LatencyRecorder } from "../stats/latency.js";
import { closeAll, endOf, openConns, phaseOf, sum } from "./common.js";

export async function setup(ctx) {
  const { sc, client, errors } = ctx;
  errors.declare("request_timeout", "no_responders");
  const conns = await openConns(ctx, Array.from({ length: sc.pubs }, (_, i) => `msgbench-requester-${i}`));
  const stats = conns.map(() => new RequestStats());
  // The replies echo the request, stamp included: each client checks its own replies' order.
  const replies = conns.map(() => new DeliveryLog(sc.pubs));

  return {
    counts: () => ({ sent: sum(stats, (s) => s.sent), received: sum(stats, (s) => s.ok) }),

    async run(ctl) {
      const payloads = new Payloads(sc.size);
      const openLoop = sc.rate > 0;
      const recorder = new LatencyRecorder({ warmupUntilNs: ctl.startNs + sc.warmup_ms * 1e6, uncorrected: openLoop });
      const endNs = endOf(sc, ctl);
      await Promise.all(
        conns.map((conn, id) =>
          runRequests({
            op: (payload) => conn.request(sc.subject, payload, sc.timeout_ms),
            id,
            payloads,
            ctl,
            msgs: sc.msgs,
            endNs,
            inFlight: sc.in_flight,
            rate: sc.rate / sc.pubs,
            phaseNs: phaseOf(sc, id),
            stats: stats[id],
            onReply: (msg, dueNs, sentNs, recvNs) => {
              recorder.record(dueNs, sentNs, recvNs);
              const log = replies[id];
              log.received += 1;
              log.bytes += msg.data.length;
              log.record(readStamp(msg.data));
            },
            onError: (err) => errors.add(client.classify(err)),
          }),
        ),
      );
      const sent = sum(stats, (s) => s.sent);
      const ok = sum(stats, (s) => s.ok);
      const stamped = payloads.stamped && replies.every((l) => l.unstamped === 0 && l.foreign === 0);
      const trackers = replies.flatMap((l) => l.trackers);
      return {
        interrupted: ctl.interrupted,
        clients: [
          ...stats.map((s, id) => pubEntry(id, { msgs: s.sent, bytes: s.sent * sc.size, firstNs: s.firstNs, lastNs: s.lastSendNs })),
          ...stats.map((s, id) =>
            subEntry(id, { msgs: s.ok, bytes: replies[id].bytes, startNs: ctl.startNs, lastNs: s.lastReplyNs }),
          ),
        ],
        delivery: {
          sent,
          received: ok,
          lost: Math.max(0, sent - ok),
          duplicated: stamped ? sum(trackers, (t) => t.duplicated) : null,
          reordered: stamped ? sum(trackers, (t) => t.reordered) : null,
          accounting: stamped ? "exact" : "count",
        },
        errors: errors.toJSON(),
        ...recorder.sections(),
      };
    },

    close: () => closeAll(conns),
  };
}
