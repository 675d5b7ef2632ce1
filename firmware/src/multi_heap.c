/* multi_heap.c - a heap on top of one TLSF pool: places the heap state at the
 * region start, keeps free_bytes / minimum_free_bytes, and takes the lock.
 *
 * Accounting as ESP-IDF keeps it (docs/allocators/esp-idf-tlsf.md): at registration
 * free_bytes = pool_size - tlsf_size(); every malloc subtracts the block's
 * payload size plus its 4-byte size word and every free adds them back, so
 * free_bytes == sum(free block sizes) + 4 * (free blocks + 1) at all times. */
#include "multi_heap.h"

#include <stdbool.h>

#include "tlsf.h"

/* The per-heap state, at the start of its region. ESP-IDF calls this typedef
 * heap_t too (a different one from heap_caps.c's): the struct tag tells. */
typedef struct multi_heap_info {
    void *lock;                /* -> the registered heap's heap_mux */
    size_t free_bytes;
    size_t minimum_free_bytes;
    size_t pool_size;          /* region size - sizeof(heap_t) */
    void *heap_data;           /* the TLSF control structure, at region + 20 */
} heap_t;

static void heap_lock(heap_t *heap)
{
    if (heap->lock != NULL) {
        spinlock_acquire(heap->lock);
    }
}

static void heap_unlock(heap_t *heap)
{
    if (heap->lock != NULL) {
        spinlock_release(heap->lock);
    }
}

multi_heap_handle_t multi_heap_register(void *start, size_t size)
{
    if (start == NULL || (uintptr_t)start % sizeof(void *) != 0u || size <= sizeof(heap_t)) {
        return NULL;
    }
    heap_t *heap = start;
    size_t pool_size = size - sizeof(heap_t);
    tlsf_t tlsf = tlsf_create_with_pool((uint8_t *)start + sizeof(heap_t), pool_size);
    if (tlsf == NULL) {
        return NULL;
    }
    heap->lock = NULL;
    heap->pool_size = pool_size;
    heap->heap_data = tlsf;
    heap->free_bytes = pool_size - tlsf_size(tlsf);
    heap->minimum_free_bytes = heap->free_bytes;
    return heap;
}

void multi_heap_set_lock(multi_heap_handle_t heap, void *lock)
{
    if (heap != NULL) {
        heap->lock = lock;
    }
}

void *multi_heap_malloc(multi_heap_handle_t heap, size_t size)
{
    if (heap == NULL || size == 0u) {
        return NULL;
    }
    heap_lock(heap);
    void *p = tlsf_malloc(heap->heap_data, size);
    if (p != NULL) {
        heap->free_bytes -= tlsf_block_size(p) + tlsf_alloc_overhead();
        if (heap->free_bytes < heap->minimum_free_bytes) {
            heap->minimum_free_bytes = heap->free_bytes;
        }
    }
    heap_unlock(heap);
    return p;
}

void multi_heap_free(multi_heap_handle_t heap, void *p)
{
    if (heap == NULL || p == NULL) {
        return;
    }
    heap_lock(heap);
    /* Read the size before the block merges; count only blocks that really
     * go back (tlsf_free refuses a double free). */
    size_t size = tlsf_block_size(p);
    if (tlsf_free(heap->heap_data, p)) {
        heap->free_bytes += size + tlsf_alloc_overhead();
    }
    heap_unlock(heap);
}

size_t multi_heap_free_size(multi_heap_handle_t heap)
{
    return heap != NULL ? heap->free_bytes : 0u;
}

size_t multi_heap_minimum_free_size(multi_heap_handle_t heap)
{
    return heap != NULL ? heap->minimum_free_bytes : 0u;
}

struct info_walk {
    multi_heap_info_t *info;
    size_t largest_raw;
};

static bool info_block(void *ptr, size_t size, bool used, void *user)
{
    (void)ptr;
    struct info_walk *w = user;
    w->info->total_blocks++;
    if (used) {
        w->info->allocated_blocks++;
    } else {
        w->info->free_blocks++;
        if (size > w->largest_raw) {
            w->largest_raw = size;
        }
    }
    return true;
}

void multi_heap_get_info(multi_heap_handle_t heap, multi_heap_info_t *info)
{
    if (info == NULL) {
        return;
    }
    *info = (multi_heap_info_t){0};
    if (heap == NULL) {
        return;
    }
    struct info_walk w = {info, 0u};
    heap_lock(heap);
    tlsf_walk_pool(heap->heap_data, info_block, &w);
    info->total_free_bytes = heap->free_bytes;
    info->minimum_free_bytes = heap->minimum_free_bytes;
    info->largest_free_block = tlsf_fit_size(heap->heap_data, w.largest_raw);
    info->total_allocated_bytes = heap->pool_size - tlsf_size(heap->heap_data) -
                                  heap->free_bytes -
                                  tlsf_alloc_overhead() * info->allocated_blocks;
    heap_unlock(heap);
}
