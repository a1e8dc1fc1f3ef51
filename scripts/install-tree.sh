#!/usr/bin/env bash
# Lays out msgbench under a prefix, as `make install` and `make dist` both do:
#   bin/msgbench
#   share/bash-completion/completions/msgbench   (bash-completion loads it on first Tab)
#   share/zsh/site-functions/_msgbench           (a folder of zsh's fpath)
#   share/fish/vendor_completions.d/msgbench.fish
#   share/powershell/msgbench.ps1                (dot-source it from $PROFILE)
#   share/man/man1/msgbench.1 and a page per subcommand (msgbench-pub.1, …)
# The completions and pages are written by the binary being installed (`msgbench completions`,
# `msgbench man --dir`), so they match its flags exactly.
#
#   bash scripts/install-tree.sh BINARY PREFIX
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: install-tree.sh BINARY PREFIX" >&2
  exit 2
fi
binary="$1"
prefix="$2"
if [ ! -x "$binary" ]; then
  echo "install-tree: no msgbench binary at $binary" >&2
  exit 1
fi

install -d "$prefix/bin" "$prefix/share/bash-completion/completions" \
  "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d" \
  "$prefix/share/powershell" "$prefix/share/man/man1"
install -m 0755 "$binary" "$prefix/bin/msgbench"

# Each file is written whole, then moved into place: a failed run leaves no half script.
put() {
  local dest="$1"
  shift
  "$binary" "$@" >"$dest.tmp"
  chmod 0644 "$dest.tmp"
  mv "$dest.tmp" "$dest"
}
put "$prefix/share/bash-completion/completions/msgbench" completions bash
put "$prefix/share/zsh/site-functions/_msgbench" completions zsh
put "$prefix/share/fish/vendor_completions.d/msgbench.fish" completions fish
put "$prefix/share/powershell/msgbench.ps1" completions powershell
"$binary" man --dir "$prefix/share/man/man1"
chmod 0644 "$prefix"/share/man/man1/msgbench*.1
