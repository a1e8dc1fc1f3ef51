// Runs the driver as msgbench does: a child process over pipes, scenario, ready, start, result.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { DRIVER_DIR } from "./paths.js";

/**
 * `scenario`: the object sent as the first line. `stopAfterMs`: send `stop` that long after
 * `start`; `closeAfterMs`: close stdin instead. Resolves with {lines (parsed), raw, status,
 * stderr, stopSentAt, exitedAt}, times in ms from `start`.
 */
export async function runDriver({ client, scenario, stopAfterMs = null, closeAfterMs = null, timeoutMs = 60_000 }) {
  const child = spawn(process.execPath, ["driver.js", "--client", client], {
    cwd: DRIVER_DIR,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const raw = [];
  const lines = [];
  let stderr = "";
  child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-8000)));
  const exited = once(child, "exit");
  const killer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  let startedAt = null;
  let stopSentAt = null;
  let resultAt = null;
  const ready = new Promise((resolve) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      raw.push(line);
      let msg = null;
      try {
        msg = JSON.parse(line);
      } catch {
        // kept in raw; the test reports it
      }
      lines.push(msg);
      if (msg?.type === "ready" || msg?.type === "error") resolve(msg);
      if (msg?.type === "result") resultAt = performance.now();
    });
    child.stdout.on("end", () => resolve(null));
  });
  child.stdin.on("error", () => {}); // the driver may exit before reading everything
  child.stdin.write(`${JSON.stringify(scenario)}\n`);
  const first = await ready;
  if (first?.type === "ready") {
    child.stdin.write('{"type":"start"}\n');
    startedAt = performance.now();
    if (stopAfterMs !== null) {
      setTimeout(() => {
        stopSentAt = performance.now();
        child.stdin.write('{"type":"stop"}\n');
      }, stopAfterMs);
    }
    if (closeAfterMs !== null) {
      setTimeout(() => {
        stopSentAt = performance.now();
        child.stdin.end();
      }, closeAfterMs);
    }
  }
  const [status] = await exited;
  clearTimeout(killer);
  const rel = (t) => (t === null || startedAt === null ? null : t - startedAt);
  return { lines, raw, status, stderr, stopSentAt: rel(stopSentAt), resultAt: rel(resultAt) };
}
