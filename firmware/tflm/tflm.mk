# firmware/tflm/tflm.mk - the TensorFlow Lite Micro firmware (tflm/), included by Makefile.
#
#   build/tflm-<scenario>.elf          looping ELFs (part of `all`)
#   build/iterN/tflm-<scenario>.elf    exiting ELFs (make ITERATIONS=N; qemu-check runs them)
#   make tflm-arena ARENA_BYTES=N MODEL=m [SCENARIO=scratch] [ITERATIONS=k]
#                                      build/[iterk/]tflm-arena-[scratch-]<m>-<N>.elf: model m
#                                      alone, its arena N bytes (the minimum-arena test's build)
#
# TFLM itself comes from the tfmicro crate (0.1.0, the 2020 TFLM): `cargo fetch` on
# tflm/sources/Cargo.toml (its Cargo.lock is committed) puts it in the cargo registry,
# `cargo metadata` says where. tflm/lib.mk compiles it once into build/tflm/libtflm.a, which
# every ELF links; the application (tflm/app/) is ours.

TFLM_SCENARIOS := healthy op-leak arena-roomy arena-tight scratch shared-tensor two-models view
TFLM_MODELS    := hello_world micro_speech magic_wand
# 96 KiB, as the other firmwares: room for arena-roomy's magic_wand (model copy and a 64 KiB
# arena).
TFLM_HEAP_SIZE := $(HEAP_SIZE)

TFLM_DIR        := $(BUILD)/tflm
TFLM_CRATE_FILE := $(TFLM_DIR)/crate-dir
TFLM_LIB        := $(TFLM_DIR)/libtflm.a
TFLM_MANIFEST   := tflm/sources/Cargo.toml
# Only the crates a build for the board would need are fetched (65 MB, not the 206 MB with
# every platform's).
TFLM_CARGO_TARGET := thumbv7em-none-eabi
TFLM_ELFS       := $(foreach s,$(TFLM_SCENARIOS),$(OUT)/tflm-$(s).elf)
# TFLM's headers (the crate's folder is read when a recipe runs), as system headers: their
# warnings are not ours.
TFLM_ROOT_SH  = $$(cat $(TFLM_CRATE_FILE))/submodules/tensorflow
TFLM_INCLUDES = -isystem $(TFLM_ROOT_SH) \
    -isystem $(TFLM_ROOT_SH)/tensorflow/lite/micro/tools/make/downloads/flatbuffers/include
# The ABI TFLM is built with (lib.mk): 32-bit enums, TF_LITE_STATIC_MEMORY's struct layouts.
TFLM_ABI := -fno-short-enums -DTF_LITE_STATIC_MEMORY -DTF_LITE_MCU_DEBUG_LOG
TFLM_APP_CXXFLAGS := $(ARCH) -O2 -g -std=c++17 -Wall -Wextra -fno-exceptions -fno-rtti \
    -fno-threadsafe-statics -fno-use-cxa-atexit -ffunction-sections -fdata-sections \
    -MMD -MP $(TFLM_ABI) -Itflm/app -Icpp -Isrc $(ITERDEF)
TFLM_C_FLAGS := $(filter-out -DconfigTOTAL_HEAP_SIZE=%,$(CFLAGS)) -fno-short-enums -DconfigTOTAL_HEAP_SIZE=$(TFLM_HEAP_SIZE)
TFLM_LDFLAGS := $(ARCH) --specs=nano.specs -nostartfiles -Lld -Tld/netduinoplus2-heap-first.ld \
    -Wl,--gc-sections -Wl,--no-warn-rwx-segments -Wl,--no-enum-size-warning

# Compiled once per output folder; the rest once per scenario (scenario.h, the variant name
# in board.cpp's messages, ITERATIONS in main.cpp).
TFLM_COMMON_CPP   := heap app_ops debug_log firmware_view
TFLM_SCENARIO_CPP := main lifecycle models
TFLM_COMMON_OBJ   := $(addprefix $(OUT)/tflm-obj/common/,$(addsuffix .o,$(TFLM_COMMON_CPP) \
                     startup heap4 semihost model_data))
tflm_objs = $(TFLM_COMMON_OBJ) $(addprefix $(OUT)/tflm-obj/$(1)/,$(addsuffix .o,$(TFLM_SCENARIO_CPP) board))
scenario_define = -DTFLM_SCENARIO_$(shell echo $(1) | tr 'a-z-' 'A-Z_')

.PHONY: tflm tflm-lib tflm-arena FORCE
tflm: $(TFLM_ELFS)
all: tflm
ELFS += $(TFLM_ELFS)

# The crate's sources: fetched by cargo (only the network to the registry is needed), found
# by cargo metadata.
$(TFLM_CRATE_FILE): $(TFLM_MANIFEST) tflm/sources/Cargo.lock
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found (it fetches TFLM)"; exit 2; }
	@mkdir -p $(TFLM_DIR)
	env -u MAKEFLAGS -u MFLAGS $(CARGO) fetch --locked --target $(TFLM_CARGO_TARGET) \
	    --manifest-path $(TFLM_MANIFEST)
	env -u MAKEFLAGS -u MFLAGS $(CARGO) metadata --locked --format-version 1 \
	    --filter-platform $(TFLM_CARGO_TARGET) --manifest-path $(TFLM_MANIFEST) \
	    | python3 tools/crate_dir.py tfmicro 0.1.0 > $@.tmp
	@mv $@.tmp $@

# Always asks lib.mk (a no-op when the library is up to date), so a lost object is rebuilt.
$(TFLM_LIB): $(TFLM_CRATE_FILE) FORCE
	@$(MAKE) --no-print-directory -f tflm/lib.mk TFLM_CRATE="$$(cat $(TFLM_CRATE_FILE))" LIB=$@
tflm-lib: $(TFLM_LIB)
FORCE:

$(OUT)/tflm-obj/common/%.o: tflm/app/%.cpp $(TFLM_CRATE_FILE) tflm/tflm.mk
	@mkdir -p $(dir $@)
	$(CXX) $(TFLM_APP_CXXFLAGS) $(TFLM_INCLUDES) -c -o $@ $<
$(OUT)/tflm-obj/common/startup.o: cpp/board/startup.cpp tflm/tflm.mk
	@mkdir -p $(dir $@)
	$(CXX) $(TFLM_APP_CXXFLAGS) -c -o $@ $<
$(OUT)/tflm-obj/common/%.o: src/%.c tflm/tflm.mk
	@mkdir -p $(dir $@)
	$(CC) $(TFLM_C_FLAGS) -c -o $@ $<
$(OUT)/tflm-obj/common/model_data.o: tflm/app/model_data.S $(TFLM_CRATE_FILE) tflm/tflm.mk
	@mkdir -p $(dir $@)
	$(CC) $(ARCH) -c -Wa,-I"$$(cat $(TFLM_CRATE_FILE))/examples/models" -o $@ $<

# One scenario's objects and ELF: $(1) scenario (folder and ELF name), $(2) its defines.
define TFLM_SCENARIO_RULES
$(OUT)/tflm-obj/$(1)/%.o: tflm/app/%.cpp $(TFLM_CRATE_FILE) tflm/tflm.mk
	@mkdir -p $$(dir $$@)
	$(CXX) $(TFLM_APP_CXXFLAGS) $(2) -DCPP_VARIANT_NAME='"tflm-$(1)"' $$(TFLM_INCLUDES) -c -o $$@ $$<
$(OUT)/tflm-obj/$(1)/board.o: cpp/board/board.cpp tflm/tflm.mk
	@mkdir -p $$(dir $$@)
	$(CXX) $(TFLM_APP_CXXFLAGS) -DCPP_VARIANT_NAME='"tflm-$(1)"' -c -o $$@ $$<
$(OUT)/tflm-$(1).elf: $(call tflm_objs,$(1)) $(TFLM_LIB) ld/netduinoplus2-heap-first.ld ld/common_sections.ld
	$(CXX) $(TFLM_LDFLAGS) -Wl,-Map=$$(@:.elf=.map) -o $$@ $(call tflm_objs,$(1)) $(TFLM_LIB) -lm
-include $(patsubst %.o,%.d,$(call tflm_objs,$(1)))
endef
$(foreach s,$(TFLM_SCENARIOS),$(eval $(call TFLM_SCENARIO_RULES,$(s),$(call scenario_define,$(s)))))

# The arena build: healthy (or SCENARIO=scratch: the application whose operator asks for a
# scratch buffer) with one model and the arena from the command line.
TFLM_ARENA_SCENARIOS := healthy scratch
ifneq ($(filter tflm-arena,$(MAKECMDGOALS)),)
ifeq ($(filter $(MODEL),$(TFLM_MODELS)),)
$(error tflm-arena needs MODEL=one of: $(TFLM_MODELS))
endif
ifeq ($(shell echo '$(ARENA_BYTES)' | grep -Ex '[1-9][0-9]*'),)
$(error tflm-arena needs ARENA_BYTES=N, a positive number of bytes)
endif
SCENARIO ?= healthy
ifeq ($(filter $(SCENARIO),$(TFLM_ARENA_SCENARIOS)),)
$(error tflm-arena takes SCENARIO=one of: $(TFLM_ARENA_SCENARIOS))
endif
# healthy keeps its old name; another scenario is named in the ELF's.
TFLM_ARENA_NAME := arena-$(if $(filter-out healthy,$(SCENARIO)),$(SCENARIO)-)$(MODEL)-$(ARENA_BYTES)
$(eval $(call TFLM_SCENARIO_RULES,$(TFLM_ARENA_NAME),-DTFLM_ARENA_BYTES=$(ARENA_BYTES)u \
    -DTFLM_ARENA_MODEL='"$(MODEL)"' $(if $(filter-out healthy,$(SCENARIO)),$(call scenario_define,$(SCENARIO)))))
tflm-arena: $(OUT)/tflm-$(TFLM_ARENA_NAME).elf
endif

# names: healthy with the application's lifecycle functions named as no lifecycle vocabulary
# would name them (-D renames them in every file that uses them): `memlife init` must find
# them by the TFLM functions they call, not by their names. Read by the init tests only.
TFLM_NAMES_DEFS := -DLoadModel=ReadModelImage -DBuildInterpreter=MakeInterpreter \
    -DRunInference=Classify -DReleaseModel=DropSession -DHandleBuildFailure=OnBadArena
$(eval $(call TFLM_SCENARIO_RULES,names,$(TFLM_NAMES_DEFS)))
tflm: $(OUT)/tflm-names.elf
