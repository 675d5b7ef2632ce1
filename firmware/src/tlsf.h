/* tlsf.h - our two-level segregated fit allocator for one memory pool, with
 * the block and control layout of ESP-IDF's TLSF (see tlsf_control.h).
 *
 * One tlsf_t manages one pool: the control structure sits at the start of
 * the memory handed to tlsf_create_with_pool() and the pool follows it. Not
 * thread-safe: multi_heap.c takes the heap's lock around every call. */
#ifndef TLSF_H
#define TLSF_H

#include <stdbool.h>
#include <stddef.h>

typedef void *tlsf_t;

/* Builds the control structure at `mem` (word aligned) for `bytes` bytes and
 * makes the rest one free block plus the zero-size sentinel. NULL if `bytes`
 * is too small for the control structure and one minimal block. */
tlsf_t tlsf_create_with_pool(void *mem, size_t bytes);
/* Bytes taken by the control structure (the pool starts that far after it). */
size_t tlsf_size(tlsf_t tlsf);
/* First byte of the pool (the first block's size word is there). */
void *tlsf_get_pool(tlsf_t tlsf);
/* Bytes a block costs beyond its payload: the size word (4). */
size_t tlsf_alloc_overhead(void);
/* Bytes TLSF keeps from a pool: first size word + sentinel (8). */
size_t tlsf_pool_overhead(void);

/* Good fit: the request is rounded up to the next list boundary and served
 * from the first block of the first non-empty list at or above it, so the
 * block found is always large enough without searching a list. NULL for 0. */
void *tlsf_malloc(tlsf_t tlsf, size_t size);
/* Frees and merges with free physical neighbours. False (nothing done) for
 * NULL and for a block that is already free. */
bool tlsf_free(tlsf_t tlsf, void *ptr);
/* Payload size of the block behind a pointer from tlsf_malloc. */
size_t tlsf_block_size(void *ptr);
/* Largest request that a free block of `size` payload bytes can serve under
 * the good-fit rounding (size rounded down to its list's lower bound). */
size_t tlsf_fit_size(tlsf_t tlsf, size_t size);

/* Calls walker(ptr, size, used, user) for every block of the pool in address
 * order (ptr = user pointer, size = payload), until it returns false. */
typedef bool (*tlsf_walker)(void *ptr, size_t size, bool used, void *user);
void tlsf_walk_pool(tlsf_t tlsf, tlsf_walker walker, void *user);

#endif
