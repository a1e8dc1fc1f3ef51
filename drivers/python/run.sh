#!/usr/bin/env bash
# Starts the Python driver with the virtualenv's interpreter when there is one (setup.sh makes
# it), else with python3 on PATH. msgbench runs this from the driver's folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="$here/.venv/bin/python"
if [ ! -x "$py" ]; then
  py="$(command -v python3)"
fi
exec "$py" "$here/driver.py" "$@"
