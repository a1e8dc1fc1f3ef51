// What every kind does around its load: connections, their end, the run's limits.
import { NS_PER_MS, within } from "../clock.js";

/** Setup could not reach the server: an `error` line of kind `connect`. */
export class ConnectError extends Error {}

/** The scenario asks for more than the server takes: an `error` line of kind `usage`. */
export class PayloadError extends Error {}

const TIMED_OUT = Symbol("timed out");

async function openOne({ sc, client, errors }, name) {
  const opening = client.open({ server: sc.server, name, connectTimeoutMs: sc.connect_timeout_ms, errors });
  const conn = await within(opening, sc.connect_timeout_ms + 1000, TIMED_OUT);
  if (conn === TIMED_OUT) {
    opening.then((c) => c.close()).catch(() => {});
    throw new Error(`no connection within ${sc.connect_timeout_ms} ms`);
  }
  return conn;
}

/**
 * Opens one connection per name, in order. A failure closes the ones already open and throws
 * a ConnectError, or a PayloadError when `size` is over the server's max_payload.
 */
export async function openConns(ctx, names) {
  const { sc } = ctx;
  const conns = [];
  for (const name of names) {
    let conn;
    try {
      conn = await openOne(ctx, name);
    } catch (err) {
      await closeAll(conns);
      throw new ConnectError(`cannot connect to ${sc.server}: ${err.message}`, { cause: err });
    }
    conns.push(conn);
    const max = conn.maxPayload();
    if (max > 0 && sc.size > max) {
      await closeAll(conns);
      throw new PayloadError(`size ${sc.size} is over the server's max_payload ${max}`);
    }
  }
  return conns;
}

/** Closes connections, waiting at most 2 s. */
export async function closeAll(conns) {
  await within(
    Promise.all(conns.map((c) => c.close().catch(() => {}))),
    2000,
  );
}

/** Flushes connections (a PING/PONG each), waiting at most `ms`; false if any did not answer. */
export async function flushAll(conns, ms) {
  const flushed = Promise.all(conns.map((c) => c.flush())).then(
    () => true,
    () => false,
  );
  return within(flushed, ms, false);
}

/** The run's end by the clock (duration_ms), or null for counted runs. */
export const endOf = (sc, ctl) => (sc.duration_ms === null ? null : ctl.startNs + sc.duration_ms * NS_PER_MS);

/** The open-loop offset of sender `i` of `n` sharing `rate`: spread evenly over one interval. */
export const phaseOf = (sc, i) => (sc.rate > 0 ? (i * 1e9) / sc.rate : 0);

export const sum = (items, f) => items.reduce((a, x) => a + f(x), 0);
