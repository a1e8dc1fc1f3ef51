#!/usr/bin/env bash
# Builds and briefly runs every fuzz target, starting from the committed seeds.
#
#   bash fuzz/run.sh [SECONDS]     # seconds per target, default 20
#
# cargo-fuzz needs nightly compiler flags (-Zsanitizer=...); RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them, so no nightly toolchain is needed. Set FUZZ_SANITIZER=none to build
# without AddressSanitizer (faster, but misses memory errors in unsafe code).
#
# Exits non-zero when a target crashes (a failed assertion, a panic, a sanitizer report or a
# timeout); the failing input is then under fuzz/artifacts/<target>/ and cargo-fuzz prints the
# command that reproduces it.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-20}"
cargo_fuzz_version="0.13.2"
sanitizer="${FUZZ_SANITIZER:-address}"
targets=(proto_parse proto_roundtrip option_values rate_schedule command_line workload_file)

if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $cargo_fuzz_version" ]; then
  echo "fuzz: installing cargo-fuzz $cargo_fuzz_version" >&2
  cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked --force
fi

export RUSTC_BOOTSTRAP=1

# One build for all targets; `cargo fuzz run` below then finds them up to date.
cargo fuzz build --sanitizer "$sanitizer"

for target in "${targets[@]}"; do
  corpus="corpus/$target"
  mkdir -p "$corpus"
  dirs=("$corpus")
  if [ -d "seeds/$target" ]; then
    dirs+=("seeds/$target")
  fi
  flags=(-max_total_time="$seconds" -timeout=10 -print_final_stats=1)
  case "$target" in
    proto_parse) flags+=(-dict=proto.dict) ;;
    option_values) flags+=(-dict=option_values.dict) ;;
  esac
  echo "fuzz: running $target for ${seconds}s" >&2
  cargo fuzz run --sanitizer "$sanitizer" "$target" "${dirs[@]}" -- "${flags[@]}"
done
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each without a crash" >&2
