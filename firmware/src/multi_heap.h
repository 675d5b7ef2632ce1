/* multi_heap.h - one heap = one memory region managed by one TLSF pool, with
 * ESP-IDF's multi_heap API and per-heap accounting.
 *
 * The heap's state (struct multi_heap_info, typedef heap_t in multi_heap.c)
 * sits at the start of its region, followed by the TLSF control structure
 * and the pool (docs/allocators/esp-idf-tlsf.md). */
#ifndef MULTI_HEAP_H
#define MULTI_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spinlock.h"

typedef portMUX_TYPE multi_heap_lock_t;
typedef struct multi_heap_info *multi_heap_handle_t;

/* What multi_heap_get_info() reports (not stored in target RAM). */
typedef struct {
    size_t total_free_bytes;      /* free_bytes */
    size_t total_allocated_bytes; /* payload of used blocks */
    size_t largest_free_block;    /* largest request one call can get */
    size_t minimum_free_bytes;
    size_t allocated_blocks;
    size_t free_blocks;
    size_t total_blocks;
} multi_heap_info_t;

/* Turns [start, start + size) into a heap; NULL if too small or unaligned. */
multi_heap_handle_t multi_heap_register(void *start, size_t size);
/* The lock taken around every operation (NULL: none). */
void multi_heap_set_lock(multi_heap_handle_t heap, void *lock);
void *multi_heap_malloc(multi_heap_handle_t heap, size_t size);
void multi_heap_free(multi_heap_handle_t heap, void *p);
/* free_bytes: free payload plus the size words TLSF would give back. */
size_t multi_heap_free_size(multi_heap_handle_t heap);
size_t multi_heap_minimum_free_size(multi_heap_handle_t heap);
void multi_heap_get_info(multi_heap_handle_t heap, multi_heap_info_t *info);
/* Walks the heap: block sizes tile the pool, free_bytes matches the free
 * blocks; with poisoning, every used block's canaries and (comprehensive)
 * the fill of every free block. False at the first damage found. */
bool multi_heap_check(multi_heap_handle_t heap, bool print_errors);

/* ESP-IDF heap poisoning (CONFIG_HEAP_POISONING_LIGHT / _COMPREHENSIVE).
 * A used block's payload is [poison_head_t][data: alloc_size bytes][tail
 * canary, 4 bytes, unaligned], the caller gets the data; comprehensive mode
 * also fills new data with 0xCE and free memory with 0xFE. The public
 * figures (free size, minimum, get_info) leave the overhead out. */
#if defined(CONFIG_HEAP_POISONING_LIGHT) || defined(CONFIG_HEAP_POISONING_COMPREHENSIVE)
#define MULTI_HEAP_POISONING 1
#ifdef CONFIG_HEAP_POISONING_COMPREHENSIVE
#define MULTI_HEAP_POISONING_SLOW 1
#endif
#define HEAD_CANARY_PATTERN 0xABBA1234u
#define TAIL_CANARY_PATTERN 0xBAAD5678u
#define MALLOC_FILL_PATTERN 0xCEu
#define FREE_FILL_PATTERN   0xFEu
typedef struct {
    uint32_t head_canary; /* HEAD_CANARY_PATTERN */
    size_t alloc_size;    /* the size the caller asked for */
} poison_head_t;
#define POISON_OVERHEAD (sizeof(poison_head_t) + sizeof(uint32_t))

/* Our firmware's own markers (ESP-IDF has neither): the poisoning level (1
 * light, 2 comprehensive), and the head of the last block whose canaries
 * were found broken when it was freed (ESP-IDF aborts there; this firmware
 * counts it in multi_heap_poison_errors and frees the block anyway, so a
 * debugger can watch the defect over many lifecycles). */
extern const uint32_t multi_heap_poisoning_level;
extern const poison_head_t *volatile multi_heap_last_corrupt;
extern volatile uint32_t multi_heap_poison_errors;
#endif

#endif
