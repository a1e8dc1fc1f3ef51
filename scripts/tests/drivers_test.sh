#!/usr/bin/env bash
# scripts/drivers.sh on a machine missing a toolchain: CI fails naming it; a person's machine
# skips it, saying so.

test_ci_fails_naming_the_missing_toolchain() {
  capture env -u MSGBENCH_REQUIRE_DRIVERS CI=true PATH="$(path_without mvn)" \
    bash scripts/drivers.sh check
  expect_status 1
  expect_output "error: driver java (mvn not installed)"
  expect_no_output "SKIPPED"
}

test_require_drivers_fails_outside_ci_too() {
  capture env -u CI MSGBENCH_REQUIRE_DRIVERS=1 PATH="$(path_without go)" \
    bash scripts/drivers.sh check
  expect_status 1
  expect_output "error: driver go (go not installed)"
}

test_ci_build_stops_before_building_anything() {
  capture env CI=true DRIVERS="go java" PATH="$(path_without java)" bash scripts/drivers.sh build
  expect_status 1
  expect_output "error: driver java (java not installed)"
  expect_no_output "drivers: build go"
}

test_a_local_skip_is_loud_and_not_a_failure() {
  capture env -u CI -u MSGBENCH_REQUIRE_DRIVERS PATH="$(path_without mvn)" \
    bash scripts/drivers.sh check
  expect_status 0
  expect_output "SKIPPED: driver java (mvn not installed)"
}

test_a_local_skip_is_the_last_thing_said() {
  capture env -u CI -u MSGBENCH_REQUIRE_DRIVERS DRIVERS=java PATH="$(path_without java mvn)" \
    bash scripts/drivers.sh build
  expect_status 0
  [[ "$(tail -n 1 <<<"$OUT")" == "SKIPPED: driver java (java mvn not installed)"* ]] ||
    fail "last line is not the skip:
$OUT"
}

test_ci_with_the_toolchain_present_passes() {
  command -v go >/dev/null || fail "go is needed by make test (bench-ref) and this test"
  capture env CI=true DRIVERS=go bash scripts/drivers.sh check
  expect_status 0
  expect_output "toolchains found for: go"
}

test_bad_mode_and_driver_are_named() {
  capture bash scripts/drivers.sh deploy
  expect_status 2
  expect_output "error: unknown mode 'deploy'"
  capture env DRIVERS=cobol bash scripts/drivers.sh check
  expect_status 2
  expect_output "error: DRIVERS: unknown driver 'cobol'"
}
