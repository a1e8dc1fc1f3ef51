// The exchange around the load: stop and EOF mid-run, and the `error` line + exit 2 cases.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { runDriver } from "./helpers/driver.js";
import { uniqueSubject } from "./helpers/fixtures.js";
import { runScenario } from "./helpers/run.js";
import { assertProtocolLine } from "./helpers/schema.js";
import { freePort, startServer } from "./helpers/server.js";

const base = {
  type: "scenario",
  protocol: "msgbench.driver/v1",
  kind: "pubsub",
  server: "",
  subject: "",
  size: 64,
  msgs: null,
  duration_ms: 30_000,
  rate: 0,
  pubs: 1,
  subs: 1,
  in_flight: 1,
  warmup_ms: 0,
  timeout_ms: 2000,
  connect_timeout_ms: 2000,
  js: null,
};

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

const scenario = (over) => ({ ...base, server: server.url, subject: uniqueSubject("proto"), ...over });

/** The one line an unrunnable scenario gets, and exit status 2. */
async function expectError(client, sc, kind, args = {}) {
  const run = await runDriver({ client, scenario: sc, ...args });
  assert.equal(run.raw.length, 1, `exactly one line expected: ${run.raw.join("\n")}\n${run.stderr}`);
  const msg = assertProtocolLine(run.raw[0]);
  assert.equal(msg.type, "error");
  assert.equal(msg.kind, kind, msg.message);
  assert.equal(run.status, 2);
  return msg;
}

const INTERRUPTIBLE = {
  pubsub: {},
  latency: { kind: "latency", rate: 2000, size: 32 },
  request: { kind: "request", size: 32, in_flight: 4 },
  request_open: { kind: "request", size: 32, rate: 2000, in_flight: 16 },
  js_pub: { kind: "js_pub", js: { stream: "PROTOSTOP", mode: "async" }, in_flight: 16, subs: 0 },
};

for (const client of ["new", "old"]) {
  describe(`client ${client}`, () => {
    for (const [name, over] of Object.entries(INTERRUPTIBLE)) {
      test(`stop mid-run: ${name} gives an interrupted result`, async () => {
        const sc = scenario(over);
        const { result, run } = await runScenario(server.url, client, sc, { stopAfterMs: 700 });
        assert.equal(result.interrupted, true);
        assert.ok(result.delivery.sent > 0, "something was sent before the stop");
        // Stop sending within 100 ms, drain for at most timeout_ms.
        assert.ok(run.resultAt - run.stopSentAt < sc.timeout_ms + 1000, `result ${run.resultAt - run.stopSentAt} ms after stop`);
      });
    }

    test("stdin EOF mid-run gives an interrupted result", async () => {
      const { result, run } = await runScenario(server.url, client, scenario({}), { closeAfterMs: 500 });
      assert.equal(result.interrupted, true);
      assert.ok(run.resultAt - run.stopSentAt < base.timeout_ms + 1000);
    });

    test("an unsupported kind: error unsupported, exit 2", async () => {
      await expectError(client, scenario({ kind: "js_consume" }), "unsupported");
    });

    test("a server that is not there: error connect, exit 2", async () => {
      const port = await freePort();
      const msg = await expectError(client, scenario({ server: `nats://127.0.0.1:${port}`, connect_timeout_ms: 1000 }), "connect");
      assert.match(msg.message, /127\.0\.0\.1/);
    });

    test("a scenario line that is not one: error usage, exit 2", async () => {
      await expectError(client, { type: "start" }, "usage");
      await expectError(client, scenario({ msgs: 10 }), "usage"); // msgs and duration_ms both set
      await expectError(client, scenario({ protocol: "msgbench.driver/v0" }), "usage");
    });
  });
}

test("an unknown --client: error usage, exit 2", async () => {
  await expectError("newest", scenario({}), "usage");
});

test("no responders are counted as such, never as timeouts", async () => {
  const sc = scenario({ kind: "request", size: 32, msgs: 20, duration_ms: null });
  for (const client of ["new", "old"]) {
    const { result } = await runScenario(server.url, client, sc, { setup: false }); // nobody answers
    assert.equal(result.errors.no_responders, 20, client);
    assert.equal(result.errors.request_timeout, 0, client);
    assert.equal(result.delivery.lost, 20, client);
  }
});

test("a responder that never answers: request_timeout", async () => {
  const { connect } = await import("@nats-io/transport-node");
  const sc = scenario({ kind: "request", size: 32, msgs: 3, duration_ms: null, timeout_ms: 300, in_flight: 3 });
  const silent = await connect({ servers: server.url });
  silent.subscribe(sc.subject, { queue: "msgbench", callback: () => {} });
  await silent.flush();
  try {
    for (const client of ["new", "old"]) {
      const { result } = await runScenario(server.url, client, sc, { setup: false });
      assert.equal(result.errors.request_timeout, 3, client);
      assert.equal(result.errors.no_responders, 0, client);
      assert.equal(result.latency.count, 0, client);
    }
  } finally {
    await silent.close();
  }
});

test("js_pub without its stream: no_responders, nothing acknowledged", async () => {
  const sc = scenario({ kind: "js_pub", js: { stream: "NOSUCH", mode: "sync" }, msgs: 5, duration_ms: null, subs: 0 });
  for (const client of ["new", "old"]) {
    const { result } = await runScenario(server.url, client, sc, { setup: false });
    assert.equal(result.errors.no_responders, 5, client);
    assert.deepEqual(result.js, { acked: 0, first_seq: 0, last_seq: 0, duplicate_acks: 0 }, client);
  }
});

test("a size over the server's max_payload: error usage, exit 2", async () => {
  for (const client of ["new", "old"]) {
    const msg = await expectError(client, scenario({ size: 2 * 1024 * 1024 }), "usage");
    assert.match(msg.message, /max_payload/);
  }
});
