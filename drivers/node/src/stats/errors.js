// Error counts by msgbench's kinds (request_timeout, no_responders, disconnected, js_other,
// slow_consumer, ...); anything without a msgbench name is `other`.

export class ErrorCounts {
  #counts = new Map();

  /** Makes `kind` appear in the result even at 0. */
  declare(...kinds) {
    for (const kind of kinds) if (!this.#counts.has(kind)) this.#counts.set(kind, 0);
    return this;
  }

  add(kind, n = 1) {
    this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + n);
  }

  get(kind) {
    return this.#counts.get(kind) ?? 0;
  }

  toJSON() {
    return Object.fromEntries(this.#counts);
  }
}
