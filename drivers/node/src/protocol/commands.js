// msgbench's side of stdin: the scenario line, then `start`, then maybe `stop`, or EOF.
import { createInterface } from "node:readline";
import { now } from "../clock.js";

/**
 * Reads stdin line by line. `scenario()` resolves with the first line (or null at EOF);
 * `started()` resolves with {how: "start" | "stop" | "eof", ns} for whichever comes first after
 * it, `ns` being when its line was read;
 * `onStop(fn)` runs fn once on `stop` or EOF (at once if that already happened).
 */
export class Commands {
  #lines;
  #first;
  #begin;
  #stopped = false;
  #stopListeners = [];

  constructor(input = process.stdin) {
    let resolveFirst;
    let resolveBegin;
    this.#first = new Promise((r) => (resolveFirst = r));
    this.#begin = new Promise((r) => (resolveBegin = r));
    let seen = 0;
    this.#lines = createInterface({ input, crlfDelay: Infinity, terminal: false });
    this.#lines.on("line", (line) => {
      if (line.trim() === "") return;
      seen += 1;
      if (seen === 1) {
        resolveFirst(line);
        return;
      }
      let type;
      try {
        type = JSON.parse(line)?.type;
      } catch {
        process.stderr.write(`ignoring a line that is not JSON: ${line.slice(0, 200)}\n`);
        return;
      }
      if (type === "start") resolveBegin({ how: "start", ns: now() });
      else if (type === "stop") {
        resolveBegin({ how: "stop", ns: now() });
        this.#stop();
      } else process.stderr.write(`ignoring an unexpected command: ${line.slice(0, 200)}\n`);
    });
    this.#lines.on("close", () => {
      resolveFirst(null);
      resolveBegin({ how: "eof", ns: now() });
      this.#stop();
    });
  }

  scenario() {
    return this.#first;
  }

  started() {
    return this.#begin;
  }

  onStop(fn) {
    if (this.#stopped) fn();
    else this.#stopListeners.push(fn);
  }

  close() {
    this.#lines.close();
  }

  #stop() {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const fn of this.#stopListeners.splice(0)) fn();
  }
}
