#!/usr/bin/env bash
# `make package`'s check, instead of cargo's own (which compiles the whole crate a second time):
# the packaged crate holds exactly what its build reads. Every file git tracks under
# msgbench/src and msgbench/proto, and msgbench/build.rs, must be in `cargo package --list`;
# nothing from tests/ or benches/ may be (they need the rest of the repository). The build reads
# nothing else: include_str!/include_bytes! name files under src/ (or build.rs's output), and
# build.rs reads proto/. A file left out would break `cargo install` of the crate; this says
# which.
set -euo pipefail
cd "$(dirname "$0")/.."

listed="$(cd msgbench && cargo package --list --locked --allow-dirty 2>/dev/null | LC_ALL=C sort)"
if [ -z "$listed" ]; then
  echo "package-check: cargo package --list printed nothing" >&2
  exit 1
fi
# msgbench/proto is a link to the repository's proto/: its files are packaged under proto/.
needed="$( (git ls-files msgbench/src msgbench/build.rs msgbench/Cargo.toml | sed 's|^msgbench/||'
  git ls-files proto) | LC_ALL=C sort)"
missing="$(LC_ALL=C comm -23 <(echo "$needed") <(echo "$listed"))"
extra="$(grep -E '^(tests|benches)/' <<<"$listed" || true)"
status=0
if [ -n "$missing" ]; then
  echo "package-check: the build reads files the package leaves out:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  status=1
fi
if [ -n "$extra" ]; then
  echo "package-check: the package holds test or bench files:" >&2
  echo "$extra" | sed 's/^/  /' >&2
  status=1
fi
# What the build reads from outside src/: its include_str!/include_bytes! paths are relative to
# the file, so each must resolve to a listed file.
while IFS=: read -r file lit; do
  dir="$(dirname "$file")"
  path="$(realpath -m --relative-to=msgbench "$dir/$lit")"
  if ! grep -qxF "$path" <<<"$listed"; then
    echo "package-check: $file includes $lit, which the package leaves out" >&2
    status=1
  fi
done < <(grep -roE --include='*.rs' 'include_(str|bytes)!\("[^"]+"\)' msgbench/src \
  | sed -E 's/include_(str|bytes)!\("([^"]+)"\)/\2/')
[ "$status" -eq 0 ] && echo "package-check: $(echo "$listed" | wc -l) files packaged, all the build reads"
exit "$status"
