// The old client is pinned to reproduce the "000" report: closed-loop request/reply at timer
// speed. What is asserted cannot flake: which flush each installed library schedules, and a
// one-sided floor (a request of the old client waits for a timer, >= 1 ms in Node; load only
// makes that slower). The new/old rates are reported as diagnostics, not asserted: see
// scripts/compare.js and the README for figures.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { after, before, test } from "node:test";
import { decodeBase64 } from "../src/stats/hdr.js";
import { uniqueSubject } from "./helpers/fixtures.js";
import { runScenario } from "./helpers/run.js";
import { startServer } from "./helpers/server.js";

const require = createRequire(import.meta.url);

function sendCommandFlush(file) {
  const src = readFileSync(file, "utf8");
  const at = src.indexOf("if (len === 0) {");
  assert.ok(at > 0, `no sendCommand flush scheduling found in ${file}`);
  return src.slice(at, at + 200);
}

test("nats-old is nats 2.15.1, whose sendCommand flushes on a setTimeout", () => {
  const dir = path.dirname(require.resolve("nats-old/package.json"));
  const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  assert.equal(pkg.name, "nats");
  assert.equal(pkg.version, "2.15.1");
  const flush = sendCommandFlush(path.join(dir, "lib/nats-base-client/protocol.js"));
  assert.match(flush, /setTimeout\(\(\) => \{\s*this\.flushPending\(\);/);
});

test("the new client's sendCommand flushes in a microtask", () => {
  // nats-core as transport-node resolves it; its entry point sits next to protocol.js.
  const core = createRequire(require.resolve("@nats-io/transport-node")).resolve("@nats-io/nats-core");
  const flush = sendCommandFlush(path.join(path.dirname(core), "protocol.js"));
  assert.match(flush, /queueMicrotask\(\(\) => \{\s*this\.flushPending\(\);/);
});

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

test("closed-loop request, in_flight 1: the old client waits for a timer on every request", async (t) => {
  const sc = {
    type: "scenario", protocol: "msgbench.driver/v1", kind: "request", server: server.url, subject: "",
    size: 32, msgs: 400, duration_ms: null, rate: 0, pubs: 1, subs: 0, in_flight: 1, warmup_ms: 0,
    timeout_ms: 5000, connect_timeout_ms: 2000, js: null,
  };
  const figures = {};
  for (const client of ["new", "old"]) {
    const { result } = await runScenario(server.url, client, { ...sc, subject: uniqueSubject("timer") });
    const replies = result.clients.find((c) => c.role === "sub");
    const h = decodeBase64(result.latency.hdr);
    figures[client] = { rate: Math.round(replies.msgs / replies.seconds), p50_us: h.getValueAtPercentile(50) / 1000 };
    assert.equal(result.latency.count, 400);
  }
  t.diagnostic(
    `closed-loop request/reply: new ${figures.new.rate} req/s (p50 ${figures.new.p50_us} µs), ` +
      `old ${figures.old.rate} req/s (p50 ${figures.old.p50_us} µs), new/old ${(figures.new.rate / figures.old.rate).toFixed(1)}x`,
  );
  assert.ok(figures.old.p50_us >= 500, `old client's median round trip ${figures.old.p50_us} µs: no timer in the path?`);
});
