// The legacy `nats` 2.x package, pinned (as the npm alias `nats-old`) to 2.15.1: the last
// release whose outbound flush was scheduled with setTimeout, the cause of the "000" report
// (closed-loop request/reply at timer speed). 2.16.0 switched to queueMicrotask.
import { connect, ErrorCode } from "nats-old";
import { watchStatus } from "./status.js";
import { installedVersion } from "./version.js";

export const info = {
  language: "javascript",
  library: "nats",
  version: installedVersion("nats-old", "nats"),
  notes:
    "pinned before the flush fix, to reproduce the 000 report (flush on a setTimeout timer; fixed in nats 2.16.0); " +
    "subscribers use callbacks; js_pub async keeps in_flight publish promises outstanding",
};

export async function open({ server, name, connectTimeoutMs, errors }) {
  const nc = await connect({ servers: server, name, timeout: connectTimeoutMs });
  watchStatus(nc.status(), errors);
  return new Conn(nc, errors);
}

class Conn {
  #js = null;

  constructor(nc, errors) {
    this.nc = nc;
    this.errors = errors;
  }

  /** The server's max_payload (0 when unknown). */
  maxPayload() {
    return this.nc.info?.max_payload ?? 0;
  }

  publish(subject, data) {
    this.nc.publish(subject, data);
  }

  subscribe(subject, onMessage) {
    return this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) this.errors.add(classify(err));
        else onMessage(msg.data);
      },
    });
  }

  request(subject, data, timeoutMs) {
    return this.nc.request(subject, data, { timeout: timeoutMs });
  }

  jsPublish(subject, data, timeoutMs) {
    this.#js ??= this.nc.jetstream({ timeout: timeoutMs });
    return this.#js.publish(subject, data);
  }

  flush() {
    return this.nc.flush();
  }

  close() {
    return this.nc.close();
  }
}

export function classify(err, { js = false } = {}) {
  switch (err?.code) {
    case ErrorCode.Timeout:
      return "request_timeout";
    case ErrorCode.NoResponders:
      return "no_responders";
    case ErrorCode.ConnectionClosed:
    case ErrorCode.Disconnect:
      return "disconnected";
    default:
      return js ? "js_other" : "other";
  }
}
