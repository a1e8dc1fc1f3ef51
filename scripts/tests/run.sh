#!/usr/bin/env bash
# Runs the scripts' own tests: every `test_*` function in scripts/tests/*_test.sh, each in its
# own subshell with a fresh scratch directory ($SCRATCH), from the repository's root. Prints one
# `ok` or `FAIL` line per test (a failure with the test's output), then
# `script tests: N passed, M failed`. Exits 1 when a test failed or none ran. Lines a test
# appends to the file $NOTES are printed under its line even when it passes (how it ran, where
# that depends on the machine). Tests that need root live in subfolders and run only when named.
#
#   bash scripts/tests/run.sh [FILE_test.sh ...]
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

files=("$@")
if [ "${#files[@]}" -eq 0 ]; then
  files=("$here"/*_test.sh)
fi

passed=0
failed=0
for file in "${files[@]}"; do
  name="$(basename "$file" .sh)"
  tests="$(bash -c 'source "$1" >/dev/null && declare -F' _ "$file" | awk '$3 ~ /^test_/ {print $3}')"
  if [ -z "$tests" ]; then
    echo "FAIL $name: no test_ functions"
    failed=$((failed + 1))
    continue
  fi
  for t in $tests; do
    scratch="$(mktemp -d)"
    log="$scratch.log"
    notes="$scratch.notes"
    if (
      set -euo pipefail
      export SCRATCH="$scratch" ROOT="$root" NOTES="$notes"
      source "$here/lib.sh"
      source "$file"
      "$t"
    ) >"$log" 2>&1; then
      echo "ok   $name: $t"
      passed=$((passed + 1))
    else
      echo "FAIL $name: $t"
      sed 's/^/    /' "$log"
      failed=$((failed + 1))
    fi
    if [ -s "$notes" ]; then
      sed 's/^/     /' "$notes"
    fi
    rm -rf "$scratch" "$log" "$notes"
  done
done

echo "script tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
