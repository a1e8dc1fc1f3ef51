#!/usr/bin/env bash
# Checks (`check`), builds (`build`) or tests (`test`) the client-library drivers in drivers/,
# each with its own toolchain: go, npm + node, python3 (a virtualenv), cargo, maven + java.
#
#   bash scripts/drivers.sh check|build|test
#
# `check` only looks for each driver's toolchain; `build` and `test` run it first.
#
# A missing toolchain is handled by who is asking:
#   - in CI (CI=true, which CI systems set) or with MSGBENCH_REQUIRE_DRIVERS=1 it is a failure:
#     the script names every driver it cannot build and exits 1, before building anything;
#   - otherwise (a person's machine) the driver is skipped, loudly: a `SKIPPED:` line when it is
#     found missing and again as the last thing printed. `msgbench compare` then skips that
#     client too (it fails instead under MSGBENCH_REQUIRE_DRIVERS=1, which .ci/run sets).
# DRIVERS="go rust" limits the run to those drivers. Any other failure stops the script with a
# non-zero status.
set -euo pipefail

what="${1:-build}"
case "$what" in
  check | build | test) ;;
  *)
    echo "error: unknown mode '$what' (use check, build or test)" >&2
    exit 2
    ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/drivers"
export PATH="$root/.tools/bin:$PATH"
# Maven quietly and in batch mode (no colours, no progress). Even so, Maven 3.8 with -q writes
# bare colour resets (ESC[0m) to both streams, which no option tried turns off (-Dstyle.color,
# --color never, jansi properties in MAVEN_OPTS); logs want plain text, so they are stripped.
# pipefail keeps Maven's exit status.
mvn_plain() {
  mvn -B -q "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
}

required=0
if [ "${MSGBENCH_REQUIRE_DRIVERS:-}" = 1 ] || [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
  required=1
fi

have() { command -v "$1" >/dev/null 2>&1; }
step() { echo "drivers: $what $1" >&2; }

# The programs each driver needs, in the order they are looked for.
tools_of() {
  case "$1" in
    go) echo go ;;
    node) echo node npm ;;
    python) echo python3 ;;
    rust) echo cargo ;;
    java) echo java mvn ;;
  esac
}

selected=()
for d in ${DRIVERS:-go node python rust java}; do
  if [ -z "$(tools_of "$d")" ]; then
    echo "error: DRIVERS: unknown driver '$d' (use go, node, python, rust, java)" >&2
    exit 2
  fi
  [ -d "$d" ] || continue
  selected+=("$d")
done

# Finds each driver's missing tools; fills `ready` and `skipped` ("driver (tool not installed)").
ready=()
skipped=()
for d in "${selected[@]}"; do
  missing=()
  for tool in $(tools_of "$d"); do
    have "$tool" || missing+=("$tool")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    ready+=("$d")
  else
    skipped+=("$d (${missing[*]} not installed)")
  fi
done

if [ "${#skipped[@]}" -gt 0 ]; then
  if [ "$required" = 1 ]; then
    for s in "${skipped[@]}"; do
      echo "error: driver $s; CI=true or MSGBENCH_REQUIRE_DRIVERS=1 requires every driver" >&2
    done
    exit 1
  fi
  for s in "${skipped[@]}"; do
    echo "SKIPPED: driver $s; msgbench compare will skip it too" >&2
  done
fi

if [ "$what" = check ]; then
  echo "drivers: toolchains found for: ${ready[*]:-none}" >&2
  exit 0
fi

for d in "${ready[@]}"; do
  step "$d"
  case "$d" in
    go)
      if [ "$what" = build ]; then (cd go && go build -o msgbench-driver-go .)
      else
        # Tested in a variable, not a pipe: a gofmt failure must not read as "nothing to format".
        unformatted="$(cd go && gofmt -l .)"
        if [ -n "$unformatted" ]; then
          echo "drivers: gofmt would change: $unformatted" >&2
          exit 1
        fi
        (cd go && go vet ./... && go test -count=1 ./...)
      fi ;;
    node)
      if [ "$what" = build ]; then (cd node && npm ci --no-audit --no-fund --loglevel=error)
      else (cd node && node --test --test-reporter=dot test/*.test.js); fi ;;
    python)
      if [ "$what" = build ]; then bash python/setup.sh
      else
        # pytest exits 5 when it collects no tests: for a suite that must run, that is a
        # failure, said plainly.
        rc=0; (cd python && .venv/bin/python -m pytest -q) || rc=$?
        if [ "$rc" -eq 5 ]; then echo "drivers: no Python tests were collected" >&2; fi
        [ "$rc" -eq 0 ] || exit "$rc"
      fi ;;
    rust)
      if [ "$what" = build ]; then cargo build --release --locked --quiet --manifest-path rust/Cargo.toml
      else
        # No incremental caches (130 MB) for a crate this script only checks and tests once;
        # cargo typed by hand in drivers/rust keeps them.
        (cd rust && export CARGO_INCREMENTAL=0 && cargo fmt --check \
          && cargo clippy --locked --quiet --all-targets -- -D warnings && cargo test --locked --quiet)
      fi ;;
    java)
      if [ "$what" = build ]; then (cd java && mvn_plain package -DskipTests)
      else (cd java && mvn_plain test); fi ;;
  esac
done

# Said again at the end, where a person reading the log looks first.
for s in "${skipped[@]}"; do
  echo "SKIPPED: driver $s; install it to $what this driver" >&2
done
