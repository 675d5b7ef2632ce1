/* multi_heap.h - one heap = one memory region managed by one TLSF pool, with
 * ESP-IDF's multi_heap API and per-heap accounting.
 *
 * The heap's state (struct multi_heap_info, typedef heap_t in multi_heap.c)
 * sits at the start of its region, followed by the TLSF control structure
 * and the pool (docs/allocators/esp-idf-tlsf.md). */
#ifndef MULTI_HEAP_H
#define MULTI_HEAP_H

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

#endif
