# firmware/rust.mk - the Rust firmware (rust/, its own cargo project), included by Makefile.
#
#   build/rust-<alloc>-<scenario>.elf        looping ELFs (alloc: llff, tlsf)
#   build/iterN/rust-<alloc>-<scenario>.elf  exiting ELFs (make ITERATIONS=N; qemu-check)
#
# One cargo target directory for all builds (build/rust-target): each feature set is cached
# on its own, so a rebuild after an edit compiles the firmware crate only. The eight ELFs of an
# output directory come from one recipe, one cargo run after the other: cargo copies each
# build to the same file (target/.../release/firmware) before we take it.

RUST_ALLOCS    := llff tlsf
RUST_SCENARIOS := healthy leak-on-switch fragmentation load-peak
RUST_TARGET    := thumbv7em-none-eabi
CARGO          ?= cargo
RUST_TARGET_DIR := $(abspath $(BUILD)/rust-target)
RUST_SRC       := $(wildcard rust/src/*.rs) rust/Cargo.toml rust/Cargo.lock rust/build.rs \
                  rust/memory.x rust/.cargo/config.toml rust.mk
RUST_ELFS      := $(foreach a,$(RUST_ALLOCS),$(foreach s,$(RUST_SCENARIOS),$(OUT)/rust-$(a)-$(s).elf))
ifdef ITERATIONS
RUST_FEATURES  := ,iterations
endif

.PHONY: rust rust-target
rust: $(RUST_ELFS)
all: rust

# The standard library for the target comes from rustup (on a new machine too).
rust-target:
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found; install Rust with rustup"; exit 2; }
	@if ! rustup target list --installed 2>/dev/null | grep -qx $(RUST_TARGET); then \
	  command -v rustup >/dev/null || { echo "error: the $(RUST_TARGET) target is missing and rustup is not installed"; exit 2; }; \
	  rustup target add $(RUST_TARGET); \
	fi

$(RUST_ELFS) &: $(RUST_SRC) | rust-target
	@mkdir -p $(OUT)
	@set -e; cd rust; for a in $(RUST_ALLOCS); do for s in $(RUST_SCENARIOS); do \
	  echo "cargo build --release --locked --features $$a,$$s$(RUST_FEATURES)"; \
	  env -u MAKEFLAGS -u MFLAGS FW_ITERATIONS=$(ITERATIONS) CARGO_TARGET_DIR=$(RUST_TARGET_DIR) $(CARGO) build --quiet \
	    --release --locked --features $$a,$$s$(RUST_FEATURES); \
	  cp $(RUST_TARGET_DIR)/$(RUST_TARGET)/release/firmware ../$(OUT)/rust-$$a-$$s.elf; \
	done; done

# One build with Rust's v0 symbol mangling (`_R...` instead of `_ZN...17h<hash>E`), for
# memlife's tests of v0 names: the leak-on-switch TlsfHeap firmware, looping. RUSTFLAGS
# replaces .cargo/config.toml's flags, so they are repeated; its own target directory keeps the
# other builds' crates cached.
RUST_V0_ELF := $(BUILD)/rust-tlsf-leak-on-switch-v0.elf
RUST_V0_FLAGS := -C symbol-mangling-version=v0 -C link-arg=-Tlink.x \
                 -C link-arg=--compress-debug-sections=none
ifndef ITERATIONS
rust: $(RUST_V0_ELF)
endif
$(RUST_V0_ELF): $(RUST_SRC) | rust-target
	@mkdir -p $(BUILD)
	@echo "cargo build --release --locked --features tlsf,leak-on-switch (v0 mangling)"
	@cd rust && env -u MAKEFLAGS -u MFLAGS RUSTFLAGS="$(RUST_V0_FLAGS)" \
	  CARGO_TARGET_DIR=$(abspath $(BUILD)/rust-target-v0) $(CARGO) build --quiet --release \
	  --locked --features tlsf,leak-on-switch
	cp $(BUILD)/rust-target-v0/$(RUST_TARGET)/release/firmware $@

# qemu-check runs $(ELFS) (expanded when its recipe runs, after this file is read).
ELFS += $(RUST_ELFS)
