#!/usr/bin/env bash
# `make image`: builds the container image deploy/Containerfile describes, from the binary the
# release archive holds (BINARY, the Makefile passes the one `make dist` built; default
# target/release/msgbench) and the pinned nats-server (the image target makes both first), and
# writes it as an OCI archive:
#
#   target/image/msgbench-VERSION.oci.tar     image msgbench:VERSION (VERSION: `msgbench --version`)
#
# then prints its size, compressed (the archive, as a registry stores it) and unpacked.
#
# buildah builds it without a daemon and without pulling anything (the Containerfile starts
# FROM scratch). Its storage is private to this build (target/image/storage, the vfs driver,
# which needs no kernel overlay support) and is deleted at the end: the archive is the product.
# buildah needs root here (or a user with subordinate ids for its user namespace).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="target/image"
binary="${1:-target/release/msgbench}"

for tool in buildah jq; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "error: $tool not found; install it (Debian: apt-get install buildah jq), or build with Docker as deploy/Containerfile says" >&2
    exit 1
  fi
done

version="$("$binary" --version | awk '{print $2}')"
[ -n "$version" ] || { echo "error: $binary --version printed no version" >&2; exit 1; }
name="msgbench:$version"
archive="$out/msgbench-$version.oci.tar"

mkdir -p "$out"
storage="$out/storage"
context="$out/context"
cleanup() { rm -rf "$storage" "$context"; }
trap cleanup EXIT
cleanup
store=(--root "$root/$storage/root" --runroot "$root/$storage/run" --storage-driver vfs)

bash scripts/image-rootfs.sh "$context" "$binary"

# The image's dates are the last commit's, not the build's: the same binaries built into an image
# again give the same digest.
stamp="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
buildah "${store[@]}" bud --quiet --layers=false --timestamp "$stamp" \
  --build-arg "VERSION=$version" -f deploy/Containerfile -t "$name" "$context" >/dev/null
rm -f "$archive"
buildah "${store[@]}" push --quiet "$name" "oci-archive:$archive:$name"

# Unpacked: each layer's tar, uncompressed (what a runtime extracts).
unpacked=0
for layer in $(tar -xOf "$archive" index.json | jq -r '.manifests[0].digest' |
  sed 's|^sha256:|blobs/sha256/|' | xargs -I{} tar -xOf "$archive" {} | jq -r '.layers[].digest'); do
  size="$(tar -xOf "$archive" "blobs/sha256/${layer#sha256:}" | gzip -dc | wc -c)"
  unpacked=$((unpacked + size))
done
digest="$(tar -xOf "$archive" index.json | jq -r '.manifests[0].digest')"
echo "image $name ($digest): $archive"
echo "size: $(numfmt --to=iec-i --suffix=B "$(stat -c %s "$archive")") compressed (the archive), $(numfmt --to=iec-i --suffix=B "$unpacked") unpacked"
