// What msgbench sets up before it starts a driver: the echo service for `request` (queue group
// msgbench) and the stream for `js_pub` (memory storage, subjects = the scenario's subject).
import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";

export const uniqueSubject = (tag) => `msgbench.node.${tag}.${randomBytes(4).toString("hex")}`;

/** An echo responder on `subject`; resolves with a function that stops it. */
export async function startEcho(url, subject) {
  const nc = await connect({ servers: url, name: "msgbench-test-echo" });
  nc.subscribe(subject, { queue: "msgbench", callback: (err, msg) => err || msg.respond(msg.data) });
  await nc.flush();
  return () => nc.close();
}

/** Creates the stream; resolves with a function that deletes it. */
export async function createStream(url, stream, subject) {
  const nc = await connect({ servers: url, name: "msgbench-test-stream" });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [subject], storage: "memory" });
  return async () => {
    await jsm.streams.delete(stream).catch(() => {});
    await nc.close();
  };
}

/** Does the vector's `setup` for this scenario; resolves with its teardown. */
export async function setupFor(url, scenario) {
  if (scenario.kind === "request") return startEcho(url, scenario.subject);
  if (scenario.kind === "js_pub") return createStream(url, scenario.js.stream, scenario.subject);
  return async () => {};
}
