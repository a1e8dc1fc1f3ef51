#!/usr/bin/env bash
# Builds (`build`) or tests (`test`) the client-library drivers in drivers/, each with its own
# toolchain: go, npm + node, python3 (a virtualenv), cargo, maven + java. A driver whose
# toolchain is missing is skipped with a note, never a failure: `msgbench compare` then skips
# that client too. Any other failure stops the script with a non-zero status.
set -euo pipefail

what="${1:-build}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/drivers"
export PATH="$root/.tools/bin:$PATH"

have() { command -v "$1" >/dev/null 2>&1; }
skip() { echo "drivers: $1 skipped: $2 not installed" >&2; }
step() { echo "drivers: $what $1" >&2; }

for d in ${DRIVERS:-go node python rust java}; do
  [ -d "$d" ] || continue
  case "$d" in
    go)
      have go || { skip go go; continue; }
      step go
      if [ "$what" = build ]; then (cd go && go build -o msgbench-driver-go .)
      else (cd go && gofmt -l . | (! grep .) && go vet ./... && go test -count=1 ./...); fi ;;
    node)
      { have node && have npm; } || { skip node "node/npm"; continue; }
      step node
      if [ "$what" = build ]; then (cd node && npm ci --no-audit --no-fund --loglevel=error)
      else (cd node && node --test --test-reporter=dot test/*.test.js); fi ;;
    python)
      have python3 || { skip python python3; continue; }
      step python
      if [ "$what" = build ]; then bash python/setup.sh
      else
        # pytest exits 5 when it collects no tests: for a suite that must run, that is a
        # failure, said plainly.
        rc=0; (cd python && .venv/bin/python -m pytest -q) || rc=$?
        if [ "$rc" -eq 5 ]; then echo "drivers: no Python tests were collected" >&2; fi
        [ "$rc" -eq 0 ] || exit "$rc"
      fi ;;
    rust)
      have cargo || { skip rust cargo; continue; }
      step rust
      if [ "$what" = build ]; then cargo build --release --locked --quiet --manifest-path rust/Cargo.toml
      else (cd rust && cargo fmt --check && cargo clippy --locked --quiet --all-targets -- -D warnings && cargo test --locked --quiet); fi ;;
    java)
      { have java && have mvn; } || { skip java "java/maven"; continue; }
      step java
      if [ "$what" = build ]; then (cd java && mvn -B -q package -DskipTests)
      else (cd java && mvn -B -q test); fi ;;
  esac
done
