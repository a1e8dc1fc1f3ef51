// One scenario end to end against a server: setup, the driver, every line checked.
import assert from "node:assert/strict";
import { runDriver } from "./driver.js";
import { setupFor } from "./fixtures.js";
import { assertProtocolLine } from "./schema.js";

/**
 * Runs `scenario` (server and subject already filled in) with `client`. Asserts the exchange:
 * every stdout line valid, `ready` first, progress lines in between, one `result` last, exit 0.
 * `setup: false` skips the vector's setup. Resolves with {result, ready, run}.
 */
export async function runScenario(url, client, scenario, { setup = true, ...driverOpts } = {}) {
  const teardown = setup ? await setupFor(url, scenario) : async () => {};
  let run;
  try {
    run = await runDriver({ client, scenario, ...driverOpts });
  } finally {
    await teardown();
  }
  const why = `stderr:\n${run.stderr}\nstdout:\n${run.raw.join("\n").slice(0, 3000)}`;
  const msgs = run.raw.map((line) => assertProtocolLine(line));
  assert.equal(run.status, 0, `exit status 0 expected; ${why}`);
  assert.equal(msgs[0]?.type, "ready", why);
  assert.equal(msgs.at(-1)?.type, "result", why);
  for (const m of msgs.slice(1, -1)) assert.equal(m.type, "progress", why);
  return { ready: msgs[0], result: msgs.at(-1).result, run };
}
