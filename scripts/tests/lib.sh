#!/usr/bin/env bash
# Helpers for scripts/tests/*_test.sh (sourced by run.sh, which sets SCRATCH and ROOT).

fail() {
  echo "assertion failed: $*" >&2
  exit 1
}

# path_without TOOL...: prints a PATH of one directory of links to every program on the
# current PATH except the named ones, to play a machine where those are not installed.
path_without() {
  local dir="$SCRATCH/path-without-$(echo "$@" | tr ' ' '-')" p f name skip hidden
  mkdir -p "$dir"
  local IFS=:
  for p in $PATH; do
    [ -d "$p" ] || continue
    for f in "$p"/*; do
      name="${f##*/}"
      [ -x "$f" ] && [ ! -d "$f" ] || continue
      skip=0
      for hidden in "${@}"; do
        [ "$name" = "$hidden" ] && skip=1
      done
      # The first on PATH wins, as in a lookup.
      [ "$skip" = 0 ] && [ ! -e "$dir/$name" ] && ln -s "$f" "$dir/$name"
    done
  done
  for hidden in "${@}"; do
    [ ! -e "$dir/$hidden" ] || fail "path_without: $hidden is still there"
  done
  echo "$dir"
}

# capture CMD...: runs CMD with stdout and stderr into $OUT, its exit status into $STATUS.
capture() {
  STATUS=0
  OUT="$("$@" 2>&1)" || STATUS=$?
}

expect_status() {
  [ "$STATUS" = "$1" ] || fail "exit status $STATUS, want $1; output:
$OUT"
}

expect_output() {
  [[ "$OUT" == *"$1"* ]] || fail "output lacks '$1':
$OUT"
}

expect_no_output() {
  [[ "$OUT" != *"$1"* ]] || fail "output has '$1':
$OUT"
}
