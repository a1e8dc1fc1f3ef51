#!/usr/bin/env bash
# Makes sure Debian's Chromium and its chromedriver are installed (/usr/bin/chromium and
# /usr/bin/chromedriver), for the HTML report's browser test (msgbench/tests/it/report.rs; CI runs
# it with MSGBENCH_REQUIRE_BROWSER=1). Debian ships the driver apart from the browser, in
# chromium-driver. Idempotent: with both present it does nothing. Otherwise it installs the
# packages chromium and chromium-driver with apt-get (the driver must match the browser's
# version, which installing both ensures), refreshing the package lists first only when the
# install fails without that, and uses sudo only when not root. The test also finds other
# installs (chromium-browser, google-chrome, a driver on PATH, or CHROME and CHROMEDRIVER).
set -euo pipefail

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found; install Chromium and a chromedriver of its version yourself, and set CHROME and CHROMEDRIVER to them unless they are on PATH" >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "error: not root and no sudo; run as root: apt-get install -y chromium chromium-driver" >&2
    exit 1
  fi
  sudo="sudo"
fi

install() {
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver
}

echo "installing chromium and chromium-driver with apt-get" >&2
if ! install; then
  echo "install failed; refreshing the package lists and trying again" >&2
  $sudo apt-get update
  install
fi

for f in /usr/bin/chromium /usr/bin/chromedriver; do
  if [ ! -x "$f" ]; then
    echo "error: $f is still missing after installing" >&2
    exit 1
  fi
done
