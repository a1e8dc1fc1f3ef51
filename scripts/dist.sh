#!/usr/bin/env bash
# Writes the release archive, as `make dist` calls it:
#
#   bash scripts/dist.sh BINARY ARCHIVE      (ARCHIVE: DIR/msgbench-VERSION-ARCH-linux.tar.gz)
#
# The archive holds one folder, msgbench-VERSION-ARCH-linux/, with:
#   bin/msgbench, and bin/nats-server (the pinned server from .tools/bin), which msgbench finds
#     beside itself before looking anywhere else;
#   share/: the completions and man pages (the layout `make install` uses: scripts/install-tree.sh);
#   README.md, docs/ and the LICENSE file when the repository has one;
#   SHA256SUMS: every other file's SHA-256, for `sha256sum -c SHA256SUMS` inside the folder.
# Beside the archive, ARCHIVE.sha256 holds the archive's own, for `sha256sum -c` in its folder.
#
# The version in the name must be the binary's own (`msgbench --version`): a mismatch fails.
# File times are the last commit's and owners are 0, so the same tree gives the same archive.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -ne 2 ]; then
  echo "usage: dist.sh BINARY ARCHIVE" >&2
  exit 2
fi
binary="$1"
archive="$2"
name="$(basename "$archive" .tar.gz)"
if [ "$name.tar.gz" != "$(basename "$archive")" ]; then
  echo "dist: $archive does not end in .tar.gz" >&2
  exit 2
fi
version="$("$binary" --version | awk '{print $2}')"
case "$name" in
  "msgbench-$version-"*) ;;
  *)
    echo "dist: $binary is msgbench $version, but the archive is named $name" >&2
    exit 1
    ;;
esac
server=.tools/bin/nats-server
if [ ! -x "$server" ]; then
  echo "dist: no nats-server in .tools/bin to bundle (make nats-server installs it)" >&2
  exit 1
fi

out="$(dirname "$archive")"
mkdir -p "$out"
stage="$(mktemp -d "$out/.stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"

bash scripts/install-tree.sh "$binary" "$root"
install -m 0755 "$server" "$root/bin/nats-server"
install -m 0644 README.md "$root/README.md"
install -d "$root/docs"
install -m 0644 docs/*.md "$root/docs/"
licenses=(LICENSE*)
if [ -e "${licenses[0]}" ]; then
  install -m 0644 "${licenses[@]}" "$root/"
else
  echo "dist: note: the repository has no LICENSE file, so the archive has none" >&2
fi

(cd "$root" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' |
  xargs -d '\n' sha256sum >SHA256SUMS)

mtime="$(git log -1 --format=%ct 2>/dev/null || date +%s)"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
  -C "$stage" -cf - "$name" | gzip -n -9 >"$archive.tmp"
mv "$archive.tmp" "$archive"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "dist: $archive ($(du -h "$archive" | cut -f1)), checksum in $archive.sha256"
