/* heap_caps.h - capability-based allocation over the registered heaps, with
 * ESP-IDF's heap_caps API (the subset this firmware needs).
 *
 * heap_caps_init() registers two regions carved from SRAM, like an ESP32-S3's
 * internal DRAM plus a second (PSRAM-like) region; heap_caps_malloc() tries
 * the heaps that have the requested capabilities, in priority then
 * registration order. */
#ifndef HEAP_CAPS_H
#define HEAP_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "multi_heap.h"

/* Capability bits, values as in ESP-IDF's esp_heap_caps.h. */
#define MALLOC_CAP_EXEC     (1u << 0)
#define MALLOC_CAP_32BIT    (1u << 1)
#define MALLOC_CAP_8BIT     (1u << 2)
#define MALLOC_CAP_DMA      (1u << 3)
#define MALLOC_CAP_SPIRAM   (1u << 10)
#define MALLOC_CAP_INTERNAL (1u << 11)
#define MALLOC_CAP_DEFAULT  (1u << 12)

/* Region sizes (bytes, multiples of 4). Region 0 ("DRAM") must hold the
 * load-peak scenario's 31244-byte inflate buffer next to its 16024-byte file
 * buffer, and must be clearly the larger one so that an unfragmented heap has
 * largest/total free >= 0.6 (firmware/README.md, "tlsf"). */
#ifndef TLSF_REGION0_SIZE
#define TLSF_REGION0_SIZE 65536u
#endif
#ifndef TLSF_REGION1_SIZE
#define TLSF_REGION1_SIZE 32768u
#endif

/* Registers both regions; call once before the first heap_caps_malloc. */
void heap_caps_init(void);
/* NULL for size 0, for caps no heap has, and when no heap can serve it. */
void *heap_caps_malloc(size_t size, uint32_t caps);
/* Frees into the heap whose region contains p; NULL and foreign pointers
 * are ignored. */
void heap_caps_free(void *p);
/* Sums over the heaps that have all of `caps`. */
size_t heap_caps_get_free_size(uint32_t caps);
size_t heap_caps_get_minimum_free_size(uint32_t caps);
/* Largest single request heap_caps_malloc(size, caps) can serve now. */
size_t heap_caps_get_largest_free_block(uint32_t caps);
/* multi_heap_get_info summed over the heaps with `caps` (largest: max). */
void heap_caps_get_info(multi_heap_info_t *info, uint32_t caps);
/* multi_heap_check on every heap with `caps` (0: all heaps); true if all pass. */
bool heap_caps_check_integrity(uint32_t caps, bool print_errors);
bool heap_caps_check_integrity_all(bool print_errors);
/* Ours, not ESP-IDF's: multi_heap_get_info of registered heap i (in
 * registration order); false when there are not that many heaps. */
bool heap_caps_registered_info(unsigned i, multi_heap_info_t *info);

#endif
