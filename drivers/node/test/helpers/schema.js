// Every line a driver writes must match spec/driver-protocol.schema.json (JSON Schema 2020-12).
import { readFileSync } from "node:fs";
import path from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { SPEC_DIR } from "./paths.js";

const schema = JSON.parse(readFileSync(path.join(SPEC_DIR, "driver-protocol.schema.json"), "utf8"));
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

/** Throws with the schema's complaints when `line` is not valid protocol JSON. */
export function assertProtocolLine(line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    throw new Error(`not JSON: ${line.slice(0, 200)}`);
  }
  if (!validate(msg)) {
    const why = validate.errors.map((e) => `${e.instancePath} ${e.message}`).join("; ");
    throw new Error(`not a protocol line (${why}): ${line.slice(0, 300)}`);
  }
  return msg;
}
