#!/usr/bin/env bash
# A new user's first minutes, on a fresh clone: the README's first command (`make run`), then
# the README's first example typed exactly as shown, in a shell whose PATH has only the
# system's folders and cargo's bin folder (where `make run` installs msgbench) — no .tools/bin,
# no Go folders. It fails, naming the step, if either does not work with no other step.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
first_example="$(grep -m1 -E '^\$ msgbench ' README.md | sed 's/^\$ //')"
if [ -z "$first_example" ]; then
  echo "first-steps: the README shows no '\$ msgbench …' example" >&2
  exit 1
fi

echo "first-steps: make run" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! make run >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "first-steps: FAILED: make run" >&2
  exit 1
fi

echo "first-steps: $first_example (PATH: system folders and $cargo_bin only)" >&2
if ! out="$(cd /tmp && env -u GOBIN -u GOPATH -u MSGBENCH_NATS_SERVER \
    PATH="$cargo_bin:/usr/local/bin:/usr/bin:/bin" HOME="$HOME" bash -c "$first_example" 2>&1)"; then
  echo "$out" >&2
  echo "first-steps: FAILED: the README's first example did not run after make run" >&2
  exit 1
fi
echo "$out" | head -3
echo "first-steps: ok" >&2
