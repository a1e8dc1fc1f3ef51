#!/usr/bin/env bash
# Assembles the build context of the container image (deploy/Containerfile) in DIR:
#
#   DIR/rootfs/  what the image holds, copied to / as root-owned files:
#                /usr/local/bin/msgbench       the release build (target/release/msgbench)
#                /usr/local/bin/nats-server    the pinned server (.tools/bin), started when a
#                                              command is given no --server
#                the shared libraries both link, at the paths their loader looks in (ldd)
#                /etc/ssl/certs/ca-certificates.crt   the host's CA bundle (Debian's
#                                              ca-certificates), for TLS to a server
#                /etc/passwd, /etc/group       root and the user msgbench (uid/gid 10001)
#                /etc/nsswitch.conf            users and hosts from those files, then DNS
#                /tmp                          mode 1777: the embedded server's storage
#   DIR/home/    an empty directory, copied as /home/msgbench owned by that user
#
# Both binaries lose their debug sections (strip --strip-debug; symbols stay, so a backtrace
# still names functions): 77 MB of line tables would more than quadruple the image.
# The libraries are copied from this host, so the image runs what msgbench was linked against
# here; nothing is downloaded.
#
#   bash scripts/image-rootfs.sh DIR [MSGBENCH_BINARY]
set -euo pipefail
umask 022

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: image-rootfs.sh DIR [MSGBENCH_BINARY]}"
msgbench="${2:-$root/target/release/msgbench}"
nats_server="$root/.tools/bin/nats-server"
certs=/etc/ssl/certs/ca-certificates.crt

for f in "$msgbench" "$nats_server"; do
  [ -x "$f" ] || { echo "error: $f: not found or not executable" >&2; exit 1; }
done
[ -s "$certs" ] || { echo "error: $certs missing: install Debian's ca-certificates" >&2; exit 1; }
for tool in ldd strip; do
  command -v "$tool" >/dev/null 2>&1 || { echo "error: $tool not found (binutils, libc-bin)" >&2; exit 1; }
done

rm -rf "$out"
fs="$out/rootfs"
mkdir -p "$fs/usr/local/bin" "$fs/etc/ssl/certs" "$fs/tmp" "$fs/home" "$out/home"
chmod 1777 "$fs/tmp"

for bin in "$msgbench" "$nats_server"; do
  dest="$fs/usr/local/bin/$(basename "$bin")"
  cp -L "$bin" "$dest"
  strip --strip-debug "$dest"
  # Every absolute path ldd names: the libraries and the loader (/lib64/ld-linux-x86-64.so.2),
  # copied as files (-L), since a link into the host's /usr would dangle in the image.
  # A static binary has none ("not a dynamic executable", exit 1).
  libs="$(ldd "$bin" 2>/dev/null | grep -Eo '/[^ ]+' || true)"
  for lib in $libs; do
    mkdir -p "$fs$(dirname "$lib")"
    cp -L "$lib" "$fs$lib"
  done
done

cp -L "$certs" "$fs$certs"

cat >"$fs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
msgbench:x:10001:10001:msgbench:/home/msgbench:/usr/sbin/nologin
PASSWD
cat >"$fs/etc/group" <<'GROUP'
root:x:0:
msgbench:x:10001:
GROUP
cat >"$fs/etc/nsswitch.conf" <<'NSS'
passwd: files
group: files
hosts: files dns
NSS

# The same bytes give the same layer: fixed modes and times (the files' own dates would differ
# from one build to the next).
find "$fs" "$out/home" -exec touch -h -d @0 {} +
