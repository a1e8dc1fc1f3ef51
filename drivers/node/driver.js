#!/usr/bin/env node
// msgbench driver for the Node.js NATS clients (protocol msgbench.driver/v1, see
// ../../spec/driver-protocol.md): `node driver.js --client new|old`.
//
// stdin: the scenario line, then `start`, maybe `stop`. stdout: `ready`, `progress` about once a
// second, then `result` (exit 0), or one `error` line (exit 2). Nothing else goes to stdout.
import { parseArgs } from "node:util";
import { CLIENTS, loadClient } from "./src/clients/index.js";
import { KIND_SETUP } from "./src/kinds/index.js";
import { ConnectError, PayloadError } from "./src/kinds/common.js";
import { Commands } from "./src/protocol/commands.js";
import { emit, emitError, flushStdout, guardStdout } from "./src/protocol/lines.js";
import { parseScenario, ScenarioError } from "./src/protocol/scenario.js";
import { Control } from "./src/run/control.js";
import { startProgress } from "./src/run/progress.js";
import { ErrorCounts } from "./src/stats/errors.js";

let resultSent = false;

async function exit(status) {
  await flushStdout();
  process.exit(status);
}

/** One `error` line and exit status 2. */
async function fail(kind, message) {
  process.stderr.write(`msgbench-driver-node: ${kind}: ${message}\n`);
  if (resultSent) return exit(0); // the result is out; a late failure is only worth stderr
  emitError(kind, message);
  await exit(2);
}

function clientName() {
  try {
    const { values } = parseArgs({ options: { client: { type: "string", default: "new" } } });
    if (!CLIENTS.includes(values.client)) throw new Error(`--client must be one of ${CLIENTS.join(", ")}`);
    return values.client;
  } catch (err) {
    throw new ScenarioError("usage", err.message);
  }
}

async function main() {
  guardStdout();
  const commands = new Commands();
  let sc;
  let client;
  try {
    const name = clientName();
    const line = await commands.scenario();
    if (line === null) throw new ScenarioError("usage", "stdin closed before a scenario line");
    sc = parseScenario(line);
    client = await loadClient(name);
  } catch (err) {
    return fail(err instanceof ScenarioError ? err.kind : "internal", err.message);
  }

  const errors = new ErrorCounts();
  let session;
  try {
    session = await KIND_SETUP[sc.kind]({ sc, client, errors });
  } catch (err) {
    const kind = err instanceof ConnectError ? "connect" : err instanceof PayloadError ? "usage" : "internal";
    return fail(kind, err.message);
  }
  emit({ type: "ready", client: client.info });

  // The clock starts when `start` is read. A `stop` or EOF before it still gets a (empty,
  // interrupted) result.
  const ctl = new Control();
  const begin = await commands.started();
  ctl.begin(begin.ns);
  commands.onStop(() => ctl.stop());
  if (begin.how !== "start") ctl.stop();

  const stopProgress = startProgress(ctl, session.counts);
  let result;
  try {
    result = await session.run(ctl);
  } catch (err) {
    stopProgress();
    await session.close();
    return fail("internal", err.stack ?? err.message);
  }
  stopProgress();
  emit({ type: "result", result });
  resultSent = true;
  await session.close();
  commands.close();
  await exit(0);
}

process.on("uncaughtException", (err) => fail("internal", err.stack ?? String(err)));
process.on("unhandledRejection", (err) => fail("internal", err?.stack ?? String(err)));

main();
