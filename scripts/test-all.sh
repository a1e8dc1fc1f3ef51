#!/usr/bin/env bash
# `make test`: every step of the test suite, each run whatever the ones before it did, so one
# failing test cannot hide the status of the rest. At the end, one line per step: passed,
# failed, or skipped and why (a step whose toolchain is missing), with how long it took, and
# any `SKIPPED:` lines a passing step printed (a driver left out, say). Exits 1 when a step
# failed, 0 otherwise; CI (.ci/run) also fails on any `SKIPPED:` line.
#
#   bash scripts/test-all.sh [STEP ...]     (default: every step, in order)
set -uo pipefail
cd "$(dirname "$0")/.."

make_="${MAKE:-make}"
all=(lint unit package bench-ref test-drivers compare-smoke test-scripts)
steps=("$@")
[ "${#steps[@]}" -gt 0 ] || steps=("${all[@]}")

# Why a step cannot run on this machine, or nothing when it can.
missing() {
  case "$1" in
    bench-ref) command -v go >/dev/null 2>&1 || echo "Go is not installed (bench/ref is a Go module)" ;;
    *) command -v cargo >/dev/null 2>&1 || echo "cargo is not installed" ;;
  esac
}

summary=()
failed=0
for step in "${steps[@]}"; do
  why="$(missing "$step")"
  if [ -n "$why" ]; then
    echo "SKIPPED: make $step: $why"
    summary+=("$(printf '  %-14s skipped: %s' "$step" "$why")")
    continue
  fi
  echo "== make $step"
  log="$(mktemp)"
  start=$(date +%s)
  "$make_" --no-print-directory "$step" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  took=$(( $(date +%s) - start ))
  skips="$(grep -c '^SKIPPED' "$log" || true)"
  rm -f "$log"
  if [ "$status" -eq 0 ]; then
    note=""
    [ "$skips" -gt 0 ] && note=", $skips part(s) skipped (see the SKIPPED lines above)"
    summary+=("$(printf '  %-14s passed in %ss%s' "$step" "$took" "$note")")
  else
    failed=$((failed + 1))
    summary+=("$(printf '  %-14s FAILED (exit %s) after %ss' "$step" "$status" "$took")")
  fi
done

n=${#steps[@]}
[ "$n" -eq 1 ] && word=step || word=steps
echo "== make test: $n $word, $failed failed"
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ]
