// The version of an installed package, as its package.json (what npm reports) says.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);

/**
 * `specifier`: the name it is installed under (for an alias, the alias); `name`: the name in
 * its package.json. Walks up from the package's entry point to its package.json.
 */
export function installedVersion(specifier, name = specifier) {
  let dir = path.dirname(require.resolve(specifier));
  for (let depth = 0; depth < 8; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
      if (pkg.name === name && typeof pkg.version === "string") return pkg.version;
    } catch {
      // no package.json at this level
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return "unknown";
}
