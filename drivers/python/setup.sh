#!/usr/bin/env bash
# Creates drivers/python/.venv and installs requirements.txt into it. Idempotent: does nothing
# when the venv already holds exactly what requirements.txt pins.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
req="$here/requirements.txt"
stamp="$venv/.requirements.sha256"

python="${PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then
      python="$(command -v "$candidate")"
      break
    fi
  done
fi
if [ -z "$python" ]; then
  echo "setup.sh: no python3 on PATH" >&2
  exit 1
fi

want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup.sh: $venv is up to date"
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$stamp"
echo "setup.sh: installed $(grep -cv '^\s*\(#\|$\)' "$req") pinned packages into $venv"
