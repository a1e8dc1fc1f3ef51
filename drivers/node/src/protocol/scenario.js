// Checks the scenario line against the protocol before anything connects: a bad line is a
// `usage` error, a kind this driver cannot run is `unsupported`.

export const PROTOCOL = "msgbench.driver/v1";
export const KINDS = ["pubsub", "latency", "request", "js_pub"];

export class ScenarioError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

const INTEGER_FIELDS = {
  size: 0,
  pubs: 1,
  subs: 0,
  in_flight: 1,
  warmup_ms: 0,
  timeout_ms: 1,
  connect_timeout_ms: 1,
};

const usage = (message) => new ScenarioError("usage", message);

/** Parses and checks one scenario line; throws a ScenarioError. */
export function parseScenario(line) {
  let sc;
  try {
    sc = JSON.parse(line);
  } catch (e) {
    throw usage(`the scenario line is not JSON: ${e.message}`);
  }
  if (sc === null || typeof sc !== "object" || Array.isArray(sc)) {
    throw usage("the scenario line is not a JSON object");
  }
  if (sc.type !== "scenario") throw usage(`expected a scenario line, got type ${JSON.stringify(sc.type)}`);
  if (sc.protocol !== PROTOCOL) {
    throw usage(`protocol ${JSON.stringify(sc.protocol)} is not ${PROTOCOL}`);
  }
  for (const field of ["server", "subject"]) {
    if (typeof sc[field] !== "string" || sc[field] === "") throw usage(`${field} must be a non-empty string`);
  }
  for (const [field, min] of Object.entries(INTEGER_FIELDS)) {
    if (!Number.isSafeInteger(sc[field]) || sc[field] < min) {
      throw usage(`${field} must be an integer >= ${min}`);
    }
  }
  for (const field of ["msgs", "duration_ms"]) {
    if (sc[field] !== null && (!Number.isSafeInteger(sc[field]) || sc[field] < 1)) {
      throw usage(`${field} must be null or an integer >= 1`);
    }
  }
  if ((sc.msgs === null) === (sc.duration_ms === null)) {
    throw usage("exactly one of msgs and duration_ms must be set");
  }
  if (typeof sc.rate !== "number" || !Number.isFinite(sc.rate) || sc.rate < 0) {
    throw usage("rate must be a number >= 0");
  }
  if (typeof sc.kind !== "string") throw usage("kind must be a string");
  if (!KINDS.includes(sc.kind)) {
    throw new ScenarioError("unsupported", `kind ${JSON.stringify(sc.kind)} is not supported by this driver`);
  }
  if (sc.kind === "latency" && !(sc.rate > 0)) throw usage("latency needs a rate > 0");
  if (sc.kind === "js_pub") {
    const js = sc.js;
    if (js === null || typeof js !== "object" || typeof js.stream !== "string" || !["sync", "async"].includes(js.mode)) {
      throw usage('js_pub needs js = {"stream": "...", "mode": "sync" | "async"}');
    }
  }
  return sc;
}
