// The vectors' checks: `PATH OP VALUE` (spec/vectors/scenarios/README.md). PATH is dot-separated
// into the result; `x.length` is an array's length; VALUE is a JSON literal; a missing path fails.

const OPS = {
  "==": (a, b) => a === b,
  "!=": (a, b) => a !== b,
  ">=": (a, b) => a >= b,
  "<=": (a, b) => a <= b,
  ">": (a, b) => a > b,
  "<": (a, b) => a < b,
};

const MISSING = Symbol("missing");

function lookup(obj, path) {
  let cur = obj;
  for (const key of path.split(".")) {
    if (key === "length" && Array.isArray(cur)) cur = cur.length;
    else if (cur !== null && typeof cur === "object" && Object.hasOwn(cur, key)) cur = cur[key];
    else return MISSING;
  }
  return cur;
}

/** Returns null when the check passes, else why it failed. */
export function applyCheck(result, check) {
  const m = /^\s*(\S+)\s+(==|!=|>=|<=|>|<)\s+(.+?)\s*$/.exec(check);
  if (m === null) return `cannot parse check ${JSON.stringify(check)}`;
  const [, path, op, literal] = m;
  let want;
  try {
    want = JSON.parse(literal);
  } catch {
    return `check ${JSON.stringify(check)}: ${literal} is not a JSON literal`;
  }
  const got = lookup(result, path);
  if (got === MISSING) return `check ${JSON.stringify(check)}: ${path} does not exist`;
  if (["<", "<=", ">", ">="].includes(op) && (typeof got !== "number" || typeof want !== "number")) {
    return `check ${JSON.stringify(check)}: ${path} is ${JSON.stringify(got)}, not a number`;
  }
  return OPS[op](got, want) ? null : `check ${JSON.stringify(check)} failed: ${path} is ${JSON.stringify(got)}`;
}
