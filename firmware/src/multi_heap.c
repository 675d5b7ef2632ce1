/* multi_heap.c - a heap on top of one TLSF pool: places the heap state at the
 * region start, keeps free_bytes / minimum_free_bytes, and takes the lock.
 *
 * Accounting as ESP-IDF keeps it (docs/allocators/esp-idf-tlsf.md): at registration
 * free_bytes = pool_size - tlsf_size(); every malloc subtracts the block's
 * payload size plus its 4-byte size word and every free adds them back, so
 * free_bytes == sum(free block sizes) + 4 * (free blocks + 1) at all times. */
#include "multi_heap.h"

#include <stdbool.h>
#include <string.h>

#include "tlsf.h"

#ifdef MULTI_HEAP_POISONING
#ifdef MULTI_HEAP_POISONING_SLOW
__attribute__((used)) const uint32_t multi_heap_poisoning_level = 2u;
#else
__attribute__((used)) const uint32_t multi_heap_poisoning_level = 1u;
#endif
const poison_head_t *volatile multi_heap_last_corrupt;
volatile uint32_t multi_heap_poison_errors;

/* The public figures hide the poisoning overhead once per heap. */
static size_t less_overhead(size_t x)
{
    return x > POISON_OVERHEAD ? x - POISON_OVERHEAD : x;
}

/* Both canaries of a used block (head = the TLSF payload) intact? */
static bool poison_intact(const poison_head_t *head, size_t block_payload)
{
    uint32_t tail;
    if (head->head_canary != HEAD_CANARY_PATTERN ||
        head->alloc_size > block_payload - POISON_OVERHEAD) {
        return false;
    }
    memcpy(&tail, (const uint8_t *)(head + 1) + head->alloc_size, sizeof(tail));
    return tail == TAIL_CANARY_PATTERN;
}

/* Where a debugger breaks to see a broken block at free time. */
__attribute__((noinline, used)) void multi_heap_poison_corrupt(const poison_head_t *head)
{
    multi_heap_last_corrupt = head;
    multi_heap_poison_errors++;
}
#endif

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
#ifdef MULTI_HEAP_POISONING
    /* A real read keeps the level in the ELF (--gc-sections) for debuggers. */
    if (*(const volatile uint32_t *)&multi_heap_poisoning_level == 0u) {
        return NULL;
    }
#endif
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
#ifdef MULTI_HEAP_POISONING
    if (size > SIZE_MAX - POISON_OVERHEAD) {
        return NULL;
    }
    const size_t raw_size = size + POISON_OVERHEAD;
#else
    const size_t raw_size = size;
#endif
    heap_lock(heap);
    void *p = tlsf_malloc(heap->heap_data, raw_size);
    if (p != NULL) {
        heap->free_bytes -= tlsf_block_size(p) + tlsf_alloc_overhead();
        if (heap->free_bytes < heap->minimum_free_bytes) {
            heap->minimum_free_bytes = heap->free_bytes;
        }
#ifdef MULTI_HEAP_POISONING
        poison_head_t *head = p;
        const uint32_t tail = TAIL_CANARY_PATTERN;
        head->head_canary = HEAD_CANARY_PATTERN;
        head->alloc_size = size;
        p = head + 1;
#ifdef MULTI_HEAP_POISONING_SLOW
        memset(p, MALLOC_FILL_PATTERN, size);
#endif
        memcpy((uint8_t *)p + size, &tail, sizeof(tail));
#endif
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
#ifdef MULTI_HEAP_POISONING
    /* The caller's pointer is the data after the head. */
    poison_head_t *head = (poison_head_t *)p - 1;
    if (!poison_intact(head, tlsf_block_size(head))) {
        multi_heap_poison_corrupt(head);
    }
    p = head;
#endif
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
    size_t x = heap != NULL ? heap->free_bytes : 0u;
#ifdef MULTI_HEAP_POISONING
    x = less_overhead(x);
#endif
    return x;
}

size_t multi_heap_minimum_free_size(multi_heap_handle_t heap)
{
    size_t x = heap != NULL ? heap->minimum_free_bytes : 0u;
#ifdef MULTI_HEAP_POISONING
    x = less_overhead(x);
#endif
    return x;
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
#ifdef MULTI_HEAP_POISONING
    /* Per block for the allocated bytes, once per heap for the rest. */
    info->total_allocated_bytes -= POISON_OVERHEAD * info->allocated_blocks;
    info->total_free_bytes = less_overhead(info->total_free_bytes);
    info->minimum_free_bytes = less_overhead(info->minimum_free_bytes);
    info->largest_free_block = less_overhead(info->largest_free_block);
#endif
    heap_unlock(heap);
}

struct check_walk {
    bool ok;
    size_t free_sum, nfree;
};

static bool check_block(void *ptr, size_t size, bool used, void *user)
{
    struct check_walk *w = user;
    if (!used) {
        w->free_sum += size;
        w->nfree++;
#ifdef MULTI_HEAP_POISONING_SLOW
        /* Free memory keeps its fill, TLSF's own words excepted. */
        const size_t skip = 2u * sizeof(void *), tail = sizeof(void *);
        for (size_t i = skip; i + tail < size; i++) {
            if (((const uint8_t *)ptr)[i] != FREE_FILL_PATTERN) {
                w->ok = false;
                return false;
            }
        }
#endif
        return true;
    }
#ifdef MULTI_HEAP_POISONING
    if (!poison_intact(ptr, size)) {
        w->ok = false;
        return false;
    }
#else
    (void)ptr;
#endif
    return true;
}

bool multi_heap_check(multi_heap_handle_t heap, bool print_errors)
{
    (void)print_errors; /* no console here: the result says it all */
    if (heap == NULL) {
        return true;
    }
    struct check_walk w = {true, 0u, 0u};
    heap_lock(heap);
    tlsf_walk_pool(heap->heap_data, check_block, &w);
    if (w.ok && heap->free_bytes != w.free_sum + tlsf_alloc_overhead() * (w.nfree + 1u)) {
        w.ok = false;
    }
    heap_unlock(heap);
    return w.ok;
}
