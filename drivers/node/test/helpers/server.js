// A nats-server of the test's own: JetStream on, loopback, a free port, a temporary store.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";

export const serverBinary = () => process.env.MSGBENCH_NATS_SERVER || "nats-server";

export async function freePort() {
  const srv = net.createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const { port } = srv.address();
  srv.close();
  await once(srv, "close");
  return port;
}

async function accepts(port) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: "127.0.0.1" }, () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });
}

/** Starts the server; resolves once it accepts connections. `stop()` ends it. */
export async function startServer() {
  const port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), "msgbench-node-"));
  const proc = spawn(serverBinary(), ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  proc.stderr.on("data", (d) => (log = (log + d).slice(-4000)));
  const exited = once(proc, "exit");
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) break;
    if (await accepts(port)) {
      return {
        url: `nats://127.0.0.1:${port}`,
        port,
        async stop() {
          proc.kill("SIGTERM");
          await exited;
          await rm(dir, { recursive: true, force: true });
        },
      };
    }
    await delay(50);
  }
  proc.kill("SIGKILL");
  await rm(dir, { recursive: true, force: true });
  throw new Error(`nats-server did not start on port ${port}: ${log}`);
}
