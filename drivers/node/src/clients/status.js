// Connection events both libraries report through `nc.status()`, counted as msgbench errors.
// (A stale connection is followed by its own `disconnect`, so it is not counted twice.)

const KINDS = {
  disconnect: "disconnected",
  slowConsumer: "slow_consumer",
  error: "other",
};

/** Counts status events into `errors` until the connection closes. */
export async function watchStatus(statusIterator, errors) {
  try {
    for await (const s of statusIterator) {
      const kind = KINDS[s.type];
      if (kind !== undefined) errors.add(kind);
      if (s.type === "disconnect" || s.type === "error") {
        process.stderr.write(`connection ${s.type}: ${JSON.stringify(s.data ?? s.error?.message ?? "")}\n`);
      }
    }
  } catch {
    // the iterator ends with the connection
  }
}
