#!/usr/bin/env bash
# `msgbench compare` against a real nats-server (started by msgbench from PATH) when a driver
# cannot start: with MSGBENCH_REQUIRE_DRIVERS=1 (CI) the run fails naming it; without, its row
# is skipped with a SKIPPED line. And the echo service it runs for each driver's request run
# stays quiet: its "serving … for up to 1day" line belongs to `msgbench reply` alone.

# msgbench run through cargo (which builds it when needed), as a program that `env` can start
# with a changed environment; prints its path.
msgbench_program() {
  local wrapper="$SCRATCH/bin/msgbench"
  mkdir -p "$SCRATCH/bin"
  printf '#!/bin/sh\nPATH="%s/.tools/bin:$PATH" exec cargo run --locked --quiet --manifest-path "%s/Cargo.toml" --bin msgbench -- "$@"\n' \
    "$ROOT" "$ROOT" >"$wrapper"
  chmod +x "$wrapper"
  echo "$wrapper"
}

test_a_driver_that_cannot_start_fails_when_required() {
  mkdir -p "$SCRATCH/no-drivers"
  capture env MSGBENCH_REQUIRE_DRIVERS=1 "$(msgbench_program)" compare --clients native,go \
    --drivers "$SCRATCH/no-drivers" request --msgs 200 --no-progress
  expect_status 1
  expect_output "compare: go fails: go driver not built"
  expect_output "go        failed: go driver not built"
  expect_no_output "SKIPPED"
}

test_a_driver_that_cannot_start_is_skipped_loudly_otherwise() {
  mkdir -p "$SCRATCH/no-drivers"
  capture env -u MSGBENCH_REQUIRE_DRIVERS "$(msgbench_program)" compare --clients native,go \
    --drivers "$SCRATCH/no-drivers" request --msgs 200 --no-progress
  expect_status 0
  expect_output "SKIPPED: go: go driver not built"
  expect_output "go        skipped: go driver not built"
}

test_the_echo_service_of_compare_stays_quiet() {
  DRIVERS=go bash scripts/drivers.sh build
  [ -x drivers/go/msgbench-driver-go ] || fail "the go driver did not build"
  capture "$(msgbench_program)" compare --clients go request --msgs 200 --runs 3 --no-progress
  expect_status 0
  local runs announced
  runs="$(grep -c '^compare: go run' <<<"$OUT" || true)"
  announced="$(grep -c 'serving requests on' <<<"$OUT" || true)"
  [ "$runs" = 3 ] || fail "$runs go runs, want 3:
$OUT"
  [ "$announced" = 0 ] || fail "announced $announced times, want none:
$OUT"
}
