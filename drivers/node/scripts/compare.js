#!/usr/bin/env node
// Rough figures for both clients on loopback, through the driver exactly as msgbench runs it:
// pubsub (pubsub_small's shape, more messages), latency_paced, and closed-loop request/reply with
// in_flight 1 (the "000" report's case). Starts its own nats-server and echo service.
//
//   node scripts/compare.js [--runs N] [--only pubsub|latency|request]
//
// Prints one line per run; the figures are whatever this machine gives (nothing is asserted).
import { parseArgs } from "node:util";
import { decodeBase64 } from "../src/stats/hdr.js";
import { runScenario } from "../test/helpers/run.js";
import { uniqueSubject } from "../test/helpers/fixtures.js";
import { startServer } from "../test/helpers/server.js";

const base = {
  type: "scenario",
  protocol: "msgbench.driver/v1",
  msgs: null,
  duration_ms: null,
  rate: 0,
  pubs: 1,
  subs: 1,
  in_flight: 1,
  warmup_ms: 0,
  timeout_ms: 5000,
  connect_timeout_ms: 2000,
  js: null,
};

export const CASES = {
  pubsub: { ...base, kind: "pubsub", size: 64, msgs: 200_000 },
  latency: { ...base, kind: "latency", size: 32, rate: 1000, msgs: 3000, warmup_ms: 200 },
  request: { ...base, kind: "request", size: 32, subs: 0, duration_ms: 3000 },
};

const pct = (h, q) => (h.totalCount === 0 ? NaN : h.getValueAtPercentile(q));
const us = (ns) => `${(ns / 1000).toFixed(ns < 10_000 ? 1 : 0)} µs`;

/** One line summing up a result. */
export function summary(kind, result) {
  const rate = (e) => (e.seconds > 0 ? Math.round(e.msgs / e.seconds) : 0);
  const d = result.delivery;
  if (kind === "pubsub") {
    const [pub, sub] = [result.clients.find((c) => c.role === "pub"), result.clients.find((c) => c.role === "sub")];
    return { pub_msgs_s: rate(pub), sub_msgs_s: rate(sub), lost: d.lost, accounting: d.accounting };
  }
  const h = decodeBase64(result.latency.hdr);
  const out = { p50: us(pct(h, 50)), p99: us(pct(h, 99)), max: us(h.maxValue), count: result.latency.count };
  if (kind === "request") {
    const replies = result.clients.find((c) => c.role === "sub");
    return { req_s: rate(replies), ...out, lost: d.lost };
  }
  const u = decodeBase64(result.latency_uncorrected.hdr);
  return { ...out, uncorrected_p50: us(pct(u, 50)), uncorrected_p99: us(pct(u, 99)), lost: d.lost };
}

async function main() {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "1" }, only: { type: "string" } } });
  const server = await startServer();
  try {
    for (const [kind, shape] of Object.entries(CASES)) {
      if (values.only && values.only !== kind) continue;
      for (let run = 0; run < Number(values.runs); run++) {
        for (const client of ["new", "old"]) {
          const sc = { ...shape, server: server.url, subject: uniqueSubject(`cmp-${kind}`) };
          const { result, ready } = await runScenario(server.url, client, sc);
          console.log(JSON.stringify({ kind, client, version: ready.client.version, ...summary(kind, result) }));
        }
      }
    }
  } finally {
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
