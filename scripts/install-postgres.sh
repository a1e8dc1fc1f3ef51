#!/usr/bin/env bash
# Makes sure Debian's PostgreSQL server programs are installed (initdb and postgres, under
# /usr/lib/postgresql/N/bin), for the tests of the history on a PostgreSQL server
# (msgbench/tests/it/history_pg.rs; CI runs them with MSGBENCH_REQUIRE_POSTGRES=1). The tests start
# their own server in a scratch folder on a free port; the package's own cluster is not used.
# Run as root, the tests run the server as the `postgres` user the package creates (PostgreSQL
# refuses to run as root). Idempotent: with initdb present it does nothing. Otherwise it
# installs the package postgresql with apt-get, refreshing the package lists first only when
# the install fails without that, and uses sudo only when not root.
set -euo pipefail

have() {
  command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}
if have && getent passwd postgres >/dev/null; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found; install PostgreSQL's server (initdb and postgres) yourself" >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "error: not root and no sudo; run as root: apt-get install -y postgresql" >&2
    exit 1
  fi
  sudo="sudo"
fi

install() {
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
}

echo "installing postgresql with apt-get" >&2
if ! install; then
  echo "install failed; refreshing the package lists and trying again" >&2
  $sudo apt-get update
  install
fi

if ! have; then
  echo "error: initdb is still missing after installing postgresql" >&2
  exit 1
fi
