// `--client new|old`: which library this run uses. Only the chosen one is loaded.

export const CLIENTS = ["new", "old"];

/** The client module: {info, open, classify}. */
export function loadClient(name) {
  switch (name) {
    case "new":
      return import("./new.js");
    case "old":
      return import("./old.js");
    default:
      throw new Error(`--client must be one of ${CLIENTS.join(", ")}, not ${JSON.stringify(name)}`);
  }
}
