#!/usr/bin/env bash
# Makes sure this machine can mount msgbench's lazy filesystem, which power-loss and corrupt
# faults put under the JetStream store of the servers msgbench starts (msgbench/tests/it/
# power_loss.rs and the planted loss in msgbench/src/scenario/js/planted_loss.rs; CI runs them
# with MSGBENCH_REQUIRE_FUSE=1). Nothing is installed to build: msgbench speaks FUSE in Rust
# (the fuser crate) and mounts with mount(2) itself, as root, with no libfuse and no fusermount.
# At run time it needs the kernel's FUSE device (/dev/fuse: the fuse module, built into
# Debian's kernels, or loaded here with modprobe) and `umount` (util-linux's mount package,
# essential on Debian) for the watchdog that detaches a mount after a SIGKILL. Idempotent.
set -euo pipefail

if [ ! -e /dev/fuse ]; then
  echo "no /dev/fuse; loading the fuse module" >&2
  modprobe fuse || { echo "error: /dev/fuse is missing and modprobe fuse failed" >&2; exit 1; }
fi
if ! command -v umount >/dev/null 2>&1; then
  echo "installing util-linux's mount with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mount || {
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mount
  }
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "warning: not root: msgbench mounts its lazy filesystem with mount(2), which needs root" >&2
fi
