// The driver's side of stdout: one JSON object per line, nothing else. Node writes to a pipe
// synchronously on Linux, and `flushStdout` waits for anything still queued before exit.

export function emit(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

export function emitError(kind, message) {
  emit({ type: "error", kind, message: String(message) });
}

/** Resolves once everything written to stdout so far has been handed to the OS. */
export function flushStdout() {
  return new Promise((resolve) => process.stdout.write("", () => resolve()));
}

/** Keeps library or stray logging off stdout: console output goes to stderr instead. */
export function guardStdout() {
  for (const name of ["log", "info", "debug", "dir", "table"]) {
    console[name] = (...args) => console.error(...args);
  }
}
