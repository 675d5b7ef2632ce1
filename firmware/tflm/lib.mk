# firmware/tflm/lib.mk - TensorFlow Lite Micro (the 2020 sources the tfmicro 0.1.0 crate ships)
# compiled into one static library, linked into every tflm-*.elf.
#
# Run by ../Makefile (a sub-make, so it shares make's job slots) once the crate is in the
# cargo registry:
#   make -f tflm/lib.mk TFLM_CRATE=<tfmicro-0.1.0 dir> LIB=build/tflm/libtflm.a
# Nothing of TFLM is in this repository: the file list is taken from the crate at build time,
# the same globs as the crate's own build script (tests, debug_log.cc and the audio frontend
# left out: our application brings its own DebugLog and feeds precomputed features).

ifndef TFLM_CRATE
$(error TFLM_CRATE is not set: run this through ../Makefile)
endif

TF_ROOT   := $(TFLM_CRATE)/submodules/tensorflow
TF_LITE   := $(TF_ROOT)/tensorflow/lite
DOWNLOADS := $(TF_LITE)/micro/tools/make/downloads
LIB       ?= build/tflm/libtflm.a
OBJ_DIR   := $(dir $(LIB))obj

not_tests = $(filter-out %test.cc %/debug_log.cc,$(1))
TFLM_SRCS := $(call not_tests,$(wildcard $(TF_LITE)/micro/*.cc)) \
             $(call not_tests,$(wildcard $(TF_LITE)/micro/kernels/*.cc)) \
             $(call not_tests,$(wildcard $(TF_LITE)/micro/memory_planner/*.cc)) \
             $(TF_LITE)/c/common.c \
             $(TF_LITE)/core/api/error_reporter.cc \
             $(TF_LITE)/core/api/flatbuffer_conversions.cc \
             $(TF_LITE)/core/api/op_resolver.cc \
             $(TF_LITE)/core/api/tensor_utils.cc \
             $(TF_LITE)/kernels/internal/quantization_util.cc \
             $(TF_LITE)/kernels/kernel_util.cc
# build/tflm/obj/<path below tensorflow/lite>.o
TFLM_OBJS := $(patsubst $(TF_LITE)/%,$(OBJ_DIR)/%.o,$(TFLM_SRCS))

ifeq ($(words $(TFLM_SRCS)),0)
$(error no TFLM sources under $(TF_LITE))
endif

CC  := arm-none-eabi-gcc
CXX := arm-none-eabi-g++
AR  := arm-none-eabi-ar
# The crate's flags (build.rs, tensorflow_build_setup) on the firmware's core, plus -O2 -g and
# no LTO: TFLM's classes and methods keep their DWARF. Warnings are TFLM's business (-w).
ARCH := -mcpu=cortex-m4 -mthumb -mfloat-abi=soft
TFLM_FLAGS := $(ARCH) -O2 -g -w -ffunction-sections -fdata-sections -funsigned-char \
    -fno-delete-null-pointer-checks -fomit-frame-pointer -fno-unwind-tables \
    -fno-short-enums -mno-unaligned-access \
    -DTF_LITE_STATIC_MEMORY -DTF_LITE_MCU_DEBUG_LOG -DGEMMLOWP_ALLOW_SLOW_SCALAR_FALLBACK \
    -I$(TF_ROOT) -I$(DOWNLOADS) -I$(DOWNLOADS)/gemmlowp -I$(DOWNLOADS)/flatbuffers/include \
    -I$(DOWNLOADS)/ruy
TFLM_CXXFLAGS := $(TFLM_FLAGS) -std=c++11 -fno-rtti -fno-exceptions -fno-use-cxa-atexit \
    -fno-threadsafe-statics -fpermissive
TFLM_CFLAGS := $(TFLM_FLAGS) -std=c11

.PHONY: lib
lib: $(LIB)

$(LIB): $(TFLM_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(OBJ_DIR)/%.cc.o: $(TF_LITE)/%.cc $(MAKEFILE_LIST)
	@mkdir -p $(dir $@)
	@echo "tflm: $*.cc"
	@$(CXX) $(TFLM_CXXFLAGS) -c -o $@ $<

$(OBJ_DIR)/%.c.o: $(TF_LITE)/%.c $(MAKEFILE_LIST)
	@mkdir -p $(dir $@)
	@echo "tflm: $*.c"
	@$(CC) $(TFLM_CFLAGS) -c -o $@ $<
