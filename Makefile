# The two entry points of the README: `make run` and `make test`. Both install the pinned
# nats-server into .tools/bin first when it is missing, and put it on PATH for what follows.

export PATH := $(CURDIR)/.tools/bin:$(PATH)
CARGO ?= cargo

.PHONY: run test build nats-server lint unit bench-ref drivers test-drivers compare-smoke fuzz bench

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

nats-server:
	@bash scripts/install-nats-server.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

unit: nats-server
	$(CARGO) test --locked

# The Go reference client used by bench/: vet and its own tests.
bench-ref:
	cd bench/ref && gofmt -l . | (! grep .) && go vet ./... && go test ./...

# The client-library drivers of `msgbench compare` (drivers/): each built with its own toolchain
# and dependencies from its registry; a missing toolchain skips that driver with a note.
drivers:
	bash scripts/drivers.sh build

test-drivers: nats-server drivers
	bash scripts/drivers.sh test

# One short compare through every driver that is built: each must return a result.
compare-smoke: nats-server drivers
	$(CARGO) run --quiet --locked -- compare --clients $(COMPARE_CLIENTS) request --msgs 2000 --no-progress

COMPARE_CLIENTS ?= native,go,node,node-old,python,rust,java

test: nats-server lint unit bench-ref test-drivers compare-smoke

# Brief fuzzing of the protocol parser (installs cargo-fuzz on first use).
fuzz:
	bash fuzz/run.sh 20

# The side-by-side benchmark; a benchmark, never part of `make test`.
bench: nats-server
	python3 bench/run.py
