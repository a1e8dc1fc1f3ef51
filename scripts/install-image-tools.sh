#!/usr/bin/env bash
# Makes sure the tools `make image` and `make test-image` use are installed, from Debian's
# packages: buildah (builds the image), umoci (unpacks it), podman and runc (run it; runc where
# crun, podman's default, refuses the host's cgroups), jq (reads its config), skopeo (copies it
# to a registry, deploy/README.md), and what the image is assembled with: strip (binutils) and
# Debian's CA bundle (ca-certificates). Idempotent: with all present it does nothing; otherwise
# apt-get installs them, refreshing the package lists first only when the install fails
# without that, with sudo only when not root.
set -euo pipefail

packages=(buildah umoci podman runc jq skopeo)
missing=()
for p in "${packages[@]}"; do
  command -v "$p" >/dev/null 2>&1 || missing+=("$p")
done
command -v strip >/dev/null 2>&1 || missing+=(binutils)
[ -s /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
[ "${#missing[@]}" -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found; install ${missing[*]} yourself" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "error: not root and no sudo; run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  sudo="sudo"
fi

install() {
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

echo "installing ${missing[*]} with apt-get" >&2
if ! install; then
  echo "install failed; refreshing the package lists and trying again" >&2
  $sudo apt-get update
  install
fi
