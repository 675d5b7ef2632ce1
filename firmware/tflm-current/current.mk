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
