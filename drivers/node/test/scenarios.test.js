// spec/vectors/scenarios: each scenario, with each client, end to end, checks applied.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { applyCheck } from "./helpers/checks.js";
import { uniqueSubject } from "./helpers/fixtures.js";
import { SCENARIO_VECTORS } from "./helpers/paths.js";
import { runScenario } from "./helpers/run.js";
import { startServer } from "./helpers/server.js";

const vectors = readdirSync(SCENARIO_VECTORS)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(path.join(SCENARIO_VECTORS, f), "utf8")));

/** Kinds each client runs (the legacy package has JetStream too, so both run all four). */
const CLIENT_KINDS = {
  new: ["pubsub", "latency", "request", "js_pub"],
  old: ["pubsub", "latency", "request", "js_pub"],
};

const LIBRARY = { new: "@nats-io/transport-node", old: "nats" };

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

test("there are scenario vectors", () => assert.ok(vectors.length >= 7));

for (const [client, kinds] of Object.entries(CLIENT_KINDS)) {
  describe(`client ${client}`, () => {
    for (const v of vectors.filter((x) => kinds.includes(x.scenario.kind))) {
      test(v.name, async () => {
        const scenario = { ...v.scenario, server: server.url, subject: uniqueSubject(v.name) };
        const { ready, result } = await runScenario(server.url, client, scenario);
        assert.equal(ready.client.language, "javascript");
        assert.equal(ready.client.library, LIBRARY[client]);
        assert.equal(result.interrupted, false);
        const failures = v.checks.map((c) => applyCheck(result, c)).filter((f) => f !== null);
        assert.deepEqual(failures, [], JSON.stringify({ ...result, latency: "…", latency_uncorrected: "…" }));
      });
    }
  });
}
