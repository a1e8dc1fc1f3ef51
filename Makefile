# The two entry points of the README: `make run` and `make test`. Both install the pinned
# nats-server into .tools/bin first when it is missing, and put it on PATH for what follows.

export PATH := $(CURDIR)/.tools/bin:$(PATH)
CARGO ?= cargo

# Every recipe runs in bash with pipefail: a command failing on the left of a pipe fails its step.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

.PHONY: run test build nats-server lint unit bench-ref drivers test-drivers compare-smoke \
	test-scripts fuzz bench install dist package

# Installs msgbench itself (into cargo's bin folder, ~/.cargo/bin unless CARGO_HOME says
# otherwise), so the README's examples can be typed as shown; the binary finds the server in
# this checkout's .tools/bin.
CARGO_BIN := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin

run: nats-server
	$(CARGO) install --locked --path msgbench
	$(CARGO_BIN)/msgbench
	@command -v msgbench >/dev/null 2>&1 || echo "note: add $(CARGO_BIN) to PATH to type msgbench" >&2

build:
	$(CARGO) build --release --locked

# `make install`: msgbench (the release build), its completions for bash, zsh, fish and
# PowerShell, and its man pages, under $(DESTDIR)$(PREFIX) (layout: scripts/install-tree.sh).
# PREFIX is ~/.local, not /usr/local: like `make run`, it installs for the user who types it,
# with no root; ~/.local/bin is on PATH on most systems, and bash-completion, fish and man look
# under ~/.local/share by themselves (zsh needs one fpath line: see docs/install.md).
# `sudo make install PREFIX=/usr/local` installs for everyone; DESTDIR stages it for a package.
PREFIX ?= $(HOME)/.local
DESTDIR ?=
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)

install:
	$(CARGO) build --release --locked
	bash scripts/install-tree.sh $(TARGET_DIR)/release/msgbench "$(DESTDIR)$(PREFIX)"

# `make dist`: the release archive and its checksum in $(DIST_DIR) (contents: scripts/dist.sh).
# The binary is the release build, the very one `make run` installs and the image ships, so it
# is built once (cargo reuses target/release). An unpacked archive's msgbench tells by itself
# that it runs from one, and then uses the nats-server bundled beside it, never this checkout's
# .tools/bin. DIST_PROFILE=dist builds it with fat LTO in one codegen unit instead (minutes
# more, and nothing bench/profiles.py could measure: see the note in Cargo.toml).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' msgbench/Cargo.toml)
DIST_PROFILE ?= release
DIST_DIR ?= $(TARGET_DIR)/archive
DIST_ARCHIVE := $(DIST_DIR)/msgbench-$(VERSION)-$(shell uname -m)-linux.tar.gz
DIST_BIN := $(TARGET_DIR)/$(if $(filter dev,$(DIST_PROFILE)),debug,$(DIST_PROFILE))/msgbench

dist: nats-server
	$(CARGO) build --profile $(DIST_PROFILE) --locked
	bash scripts/dist.sh $(DIST_BIN) $(DIST_ARCHIVE)

# The crate as crates.io would get it: packaged without a build of its own (cargo's check
# compiles the whole crate again, a minute or more on two cores), then its file list checked
# against what the build reads: every source file, build.rs and the service's definition, and
# nothing else (scripts/package-check.sh). --allow-dirty: a developer's uncommitted edits are
# packaged, not refused.
package:
	$(CARGO) package -p msgbench --locked --allow-dirty --no-verify
	bash scripts/package-check.sh

nats-server:
	@bash scripts/install-nats-server.sh

# clippy without incremental caches: they would add about 370 MB to target/ for a lint that
# takes 24 s instead of 17 s after an edit (cargo clippy typed by hand keeps them).
lint:
	$(CARGO) fmt --all -- --check
	CARGO_INCREMENTAL=0 $(CARGO) clippy --locked --all-targets -- -D warnings

# The crate's tests. A test that skips part of itself (the report's browser part without
# Chromium) leaves a line in target/test-skips/, printed after the run, since cargo test shows a
# passing test's output to no one. MSGBENCH_REQUIRE_DRIVERS is dropped for this step only: the
# suite's compare tests point at drivers left unbuilt on purpose; the requirement is for the
# real drivers (test-drivers, compare-smoke).
unit: nats-server
	@rm -rf target/test-skips
	env -u MSGBENCH_REQUIRE_DRIVERS $(CARGO) test --locked
	@if [ -d target/test-skips ]; then cat target/test-skips/*; fi

# The Go reference client used by bench/: vet and its own tests.
# Its tests start the pinned nats-server from .tools/bin and fail, not skip, without one.
bench-ref: nats-server
	cd bench/ref && unformatted="$$(gofmt -l .)" && \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	cd bench/ref && go vet ./... && go test ./...

# The client-library drivers of `msgbench compare` (drivers/): each built with its own toolchain
# and dependencies from its registry. A missing toolchain skips that driver with a SKIPPED line,
# or fails the step in CI (CI=true or MSGBENCH_REQUIRE_DRIVERS=1; see scripts/drivers.sh).
drivers:
	bash scripts/drivers.sh build

test-drivers: nats-server drivers
	bash scripts/drivers.sh test

# Two short compares through every driver that is built, request/reply and a JetStream
# publish (whose stream msgbench makes and reconciles around each driver): each must return a
# result and pass. With MSGBENCH_REQUIRE_DRIVERS=1 (CI) a driver that cannot start fails it,
# named.
compare-smoke: nats-server drivers
	$(CARGO) run --quiet --locked -- compare --clients $(COMPARE_CLIENTS) request --msgs 2000 --no-progress
	$(CARGO) run --quiet --locked -- compare --clients $(COMPARE_CLIENTS) js-pub --msgs 2000 --no-progress

COMPARE_CLIENTS ?= native,go,node,node-old,python,rust,java

# The scripts' own tests (scripts/tests/): the CI switches, the installer's version check, the
# release archive unpacked and run (so this builds it: `make dist`, once; later runs reuse it).
test-scripts: nats-server dist
	MSGBENCH_DIST_ARCHIVE=$(DIST_ARCHIVE) bash scripts/tests/run.sh

# The container image of deploy/Containerfile, built FROM scratch with buildah (no registry):
# target/image/msgbench-VERSION.oci.tar, from the release build and the pinned nats-server.
# Needs root, buildah and jq (scripts/image.sh).
.PHONY: image test-image
image: nats-server dist
	bash scripts/image.sh $(DIST_BIN)

# Builds the image and runs it: under podman where a container runs, else unpacked under chroot,
# and says which. Needs root, buildah, umoci and jq, so it is not part of `make test`; CI runs
# it (.ci/run).
test-image: image
	bash scripts/tests/run.sh scripts/tests/image/image_test.sh

# Every step, each run whatever the others did, then a line per step: passed, failed, or
# skipped and why (scripts/test-all.sh). Fails when any step failed.
test: nats-server
	bash scripts/test-all.sh

# Brief fuzzing of the protocol parser (installs cargo-fuzz on first use).
fuzz:
	bash fuzz/run.sh 20

# The side-by-side benchmark; a benchmark, never part of `make test`.
bench: nats-server
	python3 bench/run.py
