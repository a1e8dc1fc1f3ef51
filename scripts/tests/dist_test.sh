#!/usr/bin/env bash
# The release archive (`make dist`) as a user gets it: its checksums verify, it unpacks into an
# empty folder, and the msgbench in it runs there: `--version`, and a `pub` run that starts the
# nats-server bundled beside it, on a machine where no other nats-server can be found (none on
# PATH, no Go folders, an empty home, and this checkout's .tools/bin, which an archive's
# msgbench does not look in). Without the bundled server the run says so in one line.
# Also `make install` into a DESTDIR: the files land where the shells and `man` look.
#
# The archive is the one `make test-scripts` built (MSGBENCH_DIST_ARCHIVE), not rebuilt here:
# its release build takes minutes.

archive() {
  [ -n "${MSGBENCH_DIST_ARCHIVE:-}" ] ||
    fail "MSGBENCH_DIST_ARCHIVE is not set: run these tests with make test-scripts, which builds the archive"
  [ -f "$MSGBENCH_DIST_ARCHIVE" ] || fail "no archive at $MSGBENCH_DIST_ARCHIVE"
  echo "$MSGBENCH_DIST_ARCHIVE"
}

# unpack: the archive's single folder, unpacked into an empty folder in $SCRATCH.
unpack() {
  local a
  a="$(archive)"
  mkdir "$SCRATCH/unpacked"
  tar -xzf "$a" -C "$SCRATCH/unpacked"
  local top
  top="$(ls "$SCRATCH/unpacked")"
  [ "$(echo "$top" | wc -l)" = 1 ] || fail "the archive has more than one top folder: $top"
  [ "$top" = "$(basename "$a" .tar.gz)" ] || fail "the archive's folder is $top"
  echo "$SCRATCH/unpacked/$top"
}

# as_a_stranger CMD...: CMD run from an empty folder with a PATH that has no nats-server (but
# $PATH_FIRST in front, when set), an empty home and no Go folders or msgbench variables.
as_a_stranger() {
  local path
  path="$(path_without nats-server)"
  [ -z "${PATH_FIRST:-}" ] || path="$PATH_FIRST:$path"
  mkdir -p "$SCRATCH/home" "$SCRATCH/elsewhere"
  capture env -u GOBIN -u GOPATH -u MSGBENCH_NATS_SERVER -u NATS_URL \
    PATH="$path" HOME="$SCRATCH/home" bash -c 'cd "$1" && shift && exec "$@"' _ \
    "$SCRATCH/elsewhere" "$@"
}

test_the_archive_and_every_file_in_it_check_out() {
  local a dir
  a="$(archive)"
  [ -f "$a.sha256" ] || fail "no checksum file beside the archive"
  capture bash -c 'cd "$(dirname "$1")" && sha256sum -c "$(basename "$1").sha256"' _ "$a"
  expect_status 0
  expect_output "$(basename "$a"): OK"
  dir="$(unpack)"
  capture bash -c 'cd "$1" && sha256sum -c SHA256SUMS' _ "$dir"
  expect_status 0
  expect_no_output "FAILED"
  for f in bin/msgbench bin/nats-server README.md docs/architecture.md \
    share/bash-completion/completions/msgbench share/zsh/site-functions/_msgbench \
    share/fish/vendor_completions.d/msgbench.fish share/powershell/msgbench.ps1 \
    share/man/man1/msgbench.1 share/man/man1/msgbench-pub.1; do
    [ -f "$dir/$f" ] || fail "the archive lacks $f"
    grep -q " \./$f\$\|  $f\$" "$dir/SHA256SUMS" || fail "SHA256SUMS does not cover $f"
  done
  for f in "$ROOT"/LICENSE*; do
    [ -e "$f" ] || continue
    [ -f "$dir/$(basename "$f")" ] || fail "the archive lacks $(basename "$f")"
  done
  # One file changed is caught.
  echo tampered >>"$dir/README.md"
  capture bash -c 'cd "$1" && sha256sum -c SHA256SUMS' _ "$dir"
  expect_status 1
  expect_output "README.md: FAILED"
}

test_the_unpacked_msgbench_runs_with_the_server_beside_it() {
  local dir version
  dir="$(unpack)"
  version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/msgbench/Cargo.toml")"
  as_a_stranger "$dir/bin/msgbench" --version
  expect_status 0
  [ "$OUT" = "msgbench $version" ] || fail "--version printed: $OUT"
  as_a_stranger "$dir/bin/msgbench" pub --msgs 10k
  expect_status 0
  expect_output "(nats-server "
  expect_output "10,000 msgs in"
}

test_the_bundled_server_comes_before_one_on_path() {
  local dir
  dir="$(unpack)"
  # A nats-server on PATH that cannot start a server: were it chosen, the run would fail.
  mkdir "$SCRATCH/other"
  printf '#!/bin/sh\necho "the nats-server on PATH ran" >&2\nexit 1\n' >"$SCRATCH/other/nats-server"
  chmod +x "$SCRATCH/other/nats-server"
  PATH_FIRST="$SCRATCH/other" as_a_stranger "$dir/bin/msgbench" pub --msgs 10k
  expect_status 0
  expect_no_output "the nats-server on PATH ran"
  expect_output "10,000 msgs in"
}

test_without_a_bundled_server_it_says_so_in_one_line() {
  local dir
  dir="$(unpack)"
  rm "$dir/bin/nats-server"
  as_a_stranger "$dir/bin/msgbench" pub --msgs 10k
  [ "$STATUS" != 0 ] || fail "it ran with no server: $OUT"
  [ "$(echo "$OUT" | wc -l)" = 1 ] || fail "more than one line: $OUT"
  expect_output "error: no nats-server found (looked in $dir/bin, "
  # This checkout's server was not looked for: the archive is not tied to the build machine.
  expect_no_output "$ROOT/.tools/bin"
}

test_make_install_puts_files_where_shells_and_man_look() {
  local dest="$SCRATCH/dest"
  capture make -s install DESTDIR="$dest" PREFIX=/usr
  expect_status 0
  for f in bin/msgbench share/bash-completion/completions/msgbench \
    share/zsh/site-functions/_msgbench share/fish/vendor_completions.d/msgbench.fish \
    share/man/man1/msgbench.1; do
    [ -f "$dest/usr/$f" ] || fail "make install did not write $f"
  done
  # man finds the page under the prefix's man folder, and reads it.
  capture man -M "$dest/usr/share/man" -w msgbench
  expect_status 0
  [ "$OUT" = "$dest/usr/share/man/man1/msgbench.1" ] || fail "man -w found: $OUT"
  capture bash -c 'MANWIDTH=80 man -M "$1" msgbench-pub | cat' _ "$dest/usr/share/man"
  expect_status 0
  expect_output "--msgs"
  # The installed bash script registers the completion for msgbench.
  capture bash --norc --noprofile -c 'source "$1" && complete -p msgbench' _ \
    "$dest/usr/share/bash-completion/completions/msgbench"
  expect_status 0
  expect_output "-F _msgbench"
}
