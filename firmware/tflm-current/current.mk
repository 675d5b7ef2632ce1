# firmware/tflm-current/current.mk - real current TensorFlow Lite Micro's symbols, included by
# Makefile.
#
#   make tflm-current-symbols   build/tflm-current/_runtime.so: the x86-64 runtime of
#                               tflite-micro's Python wheel 0.dev20261023182759 (tflite-micro
#                               commit 8f6596d, 2026-10-23), fetched with pip and checked
#                               against its sha256 (tools/fetch_tflm_current.sh). Part of `all`:
#                               the arena observer's unit test resolves its hooks in it.

TFLM_CURRENT_DIR := $(BUILD)/tflm-current

.PHONY: tflm-current-symbols
tflm-current-symbols: $(TFLM_CURRENT_DIR)/_runtime.so

$(TFLM_CURRENT_DIR)/_runtime.so: tools/fetch_tflm_current.sh
	sh tools/fetch_tflm_current.sh $(TFLM_CURRENT_DIR)

all: tflm-current-symbols

# The current-TFLM model firmware (tflm-current/): OUR MODEL of current TFLM's classes and call
# structure (micro_model.h says what it is and is not), on heap4 like the TFLM firmware.
#
#   build/tflm-current.elf            looping (part of `all`)
#   build/tflm-current-ns-tflite.elf  the same with the classes in namespace tflite (TFLM until
#                                     2026-08; part of `all`, read by the hooks' unit test)
#   make tflm-current-arena ARENA_BYTES=N [ITERATIONS=k]
#                                     build/[iterk/]tflm-current-arena-<N>.elf: its arena N bytes
TFLMC_CXXFLAGS := $(ARCH) -O2 -g -std=c++17 -Wall -Wextra -fno-exceptions -fno-rtti \
    -fno-threadsafe-statics -fno-use-cxa-atexit -ffunction-sections -fdata-sections \
    -fno-short-enums -Itflm-current -Itflm/app -Icpp -Isrc $(ITERDEF)
TFLMC_SRC := tflm-current/main.cpp tflm-current/micro_model.cpp tflm/app/heap.cpp \
    cpp/board/startup.cpp cpp/board/board.cpp
TFLMC_C_SRC := src/heap4.c src/semihost.c
TFLMC_DEPS := $(TFLMC_SRC) $(TFLMC_C_SRC) tflm-current/micro_model.h tflm-current/current.mk \
    ld/netduinoplus2-heap-first.ld ld/common_sections.ld

# $(1): the ELF, $(2): extra defines.
define TFLMC_ELF_RULE
$(1): $(TFLMC_DEPS)
	@mkdir -p $$(dir $$@)
	$(CC) $(TFLM_C_FLAGS) -c -o $$(@:.elf=-heap4.o) src/heap4.c
	$(CC) $(TFLM_C_FLAGS) -c -o $$(@:.elf=-semihost.o) src/semihost.c
	$(CXX) $(TFLMC_CXXFLAGS) $(2) -DCPP_VARIANT_NAME='"$$(notdir $$(@:.elf=))"' \
	    $(TFLM_LDFLAGS) -Wl,-Map=$$(@:.elf=.map) -o $$@ $(TFLMC_SRC) \
	    $$(@:.elf=-heap4.o) $$(@:.elf=-semihost.o)
endef

$(eval $(call TFLMC_ELF_RULE,$(OUT)/tflm-current.elf,))
$(eval $(call TFLMC_ELF_RULE,$(OUT)/tflm-current-ns-tflite.elf,-DTFLM_NAMESPACE_TFLITE))
all: $(OUT)/tflm-current.elf $(OUT)/tflm-current-ns-tflite.elf

ifneq ($(filter tflm-current-arena,$(MAKECMDGOALS)),)
ifeq ($(shell echo '$(ARENA_BYTES)' | grep -Ex '[1-9][0-9]*'),)
$(error tflm-current-arena needs ARENA_BYTES=N, a positive number of bytes)
endif
$(eval $(call TFLMC_ELF_RULE,$(OUT)/tflm-current-arena-$(ARENA_BYTES).elf,-DARENA_BYTES=$(ARENA_BYTES)u))
.PHONY: tflm-current-arena
tflm-current-arena: $(OUT)/tflm-current-arena-$(ARENA_BYTES).elf
endif
