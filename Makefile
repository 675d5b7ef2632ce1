# memlife: the README's two commands, `make demo` and `make test`, plus `make check`.
# Both install what is missing (Debian packages, Rust components) so they work on a new machine.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
QEMU_MACHINE ?= netduinoplus2
ITERATIONS ?= 3
MEMLIFE := target/debug/memlife

# command:Debian package (chromium: the report test opens the HTML report headless)
TOOLS := arm-none-eabi-gcc:gcc-arm-none-eabi qemu-system-arm:qemu-system-arm gdb-multiarch:gdb-multiarch chromium:chromium lldb:lldb
NEWLIB_NANO := /usr/lib/arm-none-eabi/newlib/thumb/v7e-m/nofp/libc_nano.a
# libstdc++ for newlib (operator new/delete of the C++ firmware, firmware/cpp)
LIBSTDCXX_NANO := /usr/lib/arm-none-eabi/newlib/thumb/v7e-m/nofp/libstdc++_nano.a

.PHONY: test demo check deps firmware firmware-run host-test rust-test no-probe clippy fmt-check module-cycles doc build clean

## test: everything CI runs (firmware, QEMU runs, host allocator test, cargo test, the build
## without probe-rs, clippy, fmt, no import circle inside a crate, the API docs)
test: deps firmware firmware-run host-test rust-test no-probe clippy fmt-check module-cycles doc
	@echo "make test: all passed"

## demo: the bundled firmware on QEMU, end to end
demo: deps firmware build
	@bash tools/demo.sh

## check: the quick Rust checks only
check: clippy fmt-check module-cycles

deps:
	@missing=""; \
	for pair in $(TOOLS); do \
	  cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	[ -f $(NEWLIB_NANO) ] || missing="$$missing libnewlib-arm-none-eabi"; \
	[ -f $(LIBSTDCXX_NANO) ] || missing="$$missing libstdc++-arm-none-eabi-newlib"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found; install Rust with rustup"; exit 2; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy
	@# The Rust firmware (firmware/rust) is built for thumbv7em-none-eabi.
	@rustup target list --installed 2>/dev/null | grep -qx thumbv7em-none-eabi || rustup target add thumbv7em-none-eabi

firmware:
	$(MAKE) -C firmware -j2

firmware-run:
	$(MAKE) -C firmware qemu-check ITERATIONS=$(ITERATIONS)

host-test:
	$(MAKE) -C firmware host-test

build:
	$(CARGO) build --locked

rust-test: firmware
	$(CARGO) test --workspace --locked

## no-probe: memlife without its default feature `probe` still builds (and has no probe-rs)
no-probe:
	$(CARGO) check -p memlife --no-default-features --locked
	@! $(CARGO) tree -p memlife --no-default-features --locked -e normal | grep -q 'probe-rs'

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## module-cycles: no set of modules inside a crate imports each other in a loop (the checker's
## own tests first)
module-cycles:
	python3 tools/test_module_cycles.py
	python3 tools/module_cycles.py $(wildcard debugger/*/src)

## doc: the API docs of every crate build without a warning (broken links, missing docs)
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked

fmt-check:
	$(CARGO) fmt --all -- --check
	$(CARGO) fmt --manifest-path firmware/rust/Cargo.toml -- --check

clean:
	$(MAKE) -C firmware clean
	$(CARGO) clean
