// The current official client: @nats-io/transport-node (nats-core v3), with @nats-io/jetstream.
import { jetstream } from "@nats-io/jetstream";
import { connect, errors as natsErrors } from "@nats-io/transport-node";
import { watchStatus } from "./status.js";
import { installedVersion } from "./version.js";

export const info = {
  language: "javascript",
  library: "@nats-io/transport-node",
  version: installedVersion("@nats-io/transport-node"),
  notes:
    "noAsyncTraces: true (documented option: no stack capture per request/JetStream publish); " +
    "subscribers use callbacks (documented as the faster path); js_pub async keeps in_flight publish promises outstanding",
};

/** Connects one client; `errors` counts its connection events. */
export async function open({ server, name, connectTimeoutMs, errors }) {
  const nc = await connect({ servers: server, name, timeout: connectTimeoutMs, noAsyncTraces: true });
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

  /** `onMessage(data)` runs in the read loop, for every message. */
  subscribe(subject, onMessage) {
    return this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) this.errors.add(classify(err));
        else onMessage(msg.data);
      },
    });
  }

  /** Resolves with the reply message (payload in `.data`). */
  request(subject, data, timeoutMs) {
    return this.nc.request(subject, data, { timeout: timeoutMs });
  }

  /** Resolves with the PubAck ({stream, seq, duplicate}). */
  jsPublish(subject, data, timeoutMs) {
    this.#js ??= jetstream(this.nc, { timeout: timeoutMs });
    return this.#js.publish(subject, data);
  }

  flush() {
    return this.nc.flush();
  }

  close() {
    return this.nc.close();
  }
}

/** msgbench's name for a failed request or publish; `js` for JetStream publishes. */
export function classify(err, { js = false } = {}) {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof natsErrors.TimeoutError) return "request_timeout";
    if (e instanceof natsErrors.NoRespondersError) return "no_responders";
    if (e instanceof natsErrors.RequestError && e.isNoResponders()) return "no_responders";
    if (e instanceof natsErrors.ClosedConnectionError) return "disconnected";
  }
  return js ? "js_other" : "other";
}
