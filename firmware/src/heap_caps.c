/* heap_caps.c - the registered heaps: registration at start-up and
 * allocation by capabilities (docs/allocators/esp-idf-tlsf.md).
 *
 * A debugger finds every heap from the global registered_heaps: a singly
 * linked list of struct heap_t_ {caps, start, end, heap_mux, heap, next}.
 * As in ESP-IDF, the heap_t_ entries themselves are allocated from the first
 * heap once it exists, so they show as one used block there. */
#include "heap_caps.h"

#include <string.h>

#define SOC_MEMORY_TYPE_NO_PRIOS 3
#define HEAP_COUNT 2

/* One registered heap. The same typedef name as multi_heap.c's heap_t,
 * another struct: ESP-IDF has both, a walker tells them apart by the tag. */
typedef struct heap_t_ {
    uint32_t caps[SOC_MEMORY_TYPE_NO_PRIOS]; /* capabilities by priority */
    intptr_t start;
    intptr_t end; /* exclusive */
    multi_heap_lock_t heap_mux;
    multi_heap_handle_t heap; /* the struct multi_heap_info at start */
    struct {
        struct heap_t_ *sle_next;
    } next;
} heap_t;

struct registered_heap_ll {
    struct heap_t_ *slh_first;
};

/* Every heap, in registration (= address) order; empty before heap_caps_init. */
struct registered_heap_ll registered_heaps;

/* The SRAM both regions are carved from: region 0 first, region 1 right
 * after it, so that registration order is address order (as ESP-IDF
 * registers its boot-time regions) and region 0's end is region 1's start. */
static uint8_t s_heap_sram[TLSF_REGION0_SIZE + TLSF_REGION1_SIZE] __attribute__((aligned(8)));

struct region_desc {
    uint8_t *start;
    size_t size;
    uint32_t caps[SOC_MEMORY_TYPE_NO_PRIOS];
};

/* Caps per priority as ESP-IDF gives internal RAM and PSRAM: a request
 * matches a heap at the first priority where the heap has one of the asked
 * bits, if the heap has all of them over its priorities. */
static const struct region_desc s_regions[HEAP_COUNT] = {
    {s_heap_sram, TLSF_REGION0_SIZE,
     {MALLOC_CAP_8BIT | MALLOC_CAP_DEFAULT,
      MALLOC_CAP_INTERNAL | MALLOC_CAP_DMA | MALLOC_CAP_32BIT, 0u}},
    {s_heap_sram + TLSF_REGION0_SIZE, TLSF_REGION1_SIZE,
     {MALLOC_CAP_SPIRAM | MALLOC_CAP_DEFAULT, 0u, MALLOC_CAP_8BIT | MALLOC_CAP_32BIT}},
};

static uint32_t all_caps(const heap_t *h)
{
    return h->caps[0] | h->caps[1] | h->caps[2];
}

void heap_caps_init(void)
{
    if (registered_heaps.slh_first != NULL) {
        return;
    }
    /* Register into a temporary table first: the permanent one comes from
     * the first heap, which does not exist yet. */
    heap_t temp[HEAP_COUNT];
    for (int i = 0; i < HEAP_COUNT; i++) {
        heap_t *h = &temp[i];
        memcpy(h->caps, s_regions[i].caps, sizeof(h->caps));
        h->start = (intptr_t)s_regions[i].start;
        h->end = (intptr_t)(s_regions[i].start + s_regions[i].size);
        spinlock_initialize(&h->heap_mux);
        h->heap = multi_heap_register(s_regions[i].start, s_regions[i].size);
        h->next.sle_next = NULL;
    }
    heap_t *heaps = multi_heap_malloc(temp[0].heap, sizeof(temp));
    if (heaps == NULL) {
        return; /* region 0 too small for its own table: no heap at all */
    }
    memcpy(heaps, temp, sizeof(temp));
    heap_t *tail = NULL;
    for (int i = 0; i < HEAP_COUNT; i++) {
        multi_heap_set_lock(heaps[i].heap, &heaps[i].heap_mux);
        if (tail == NULL) {
            registered_heaps.slh_first = &heaps[i];
        } else {
            tail->next.sle_next = &heaps[i];
        }
        tail = &heaps[i];
    }
}

__attribute__((noinline)) void *heap_caps_malloc(size_t size, uint32_t caps)
{
    if (size == 0u) {
        return NULL;
    }
    for (int prio = 0; prio < SOC_MEMORY_TYPE_NO_PRIOS; prio++) {
        for (heap_t *h = registered_heaps.slh_first; h != NULL; h = h->next.sle_next) {
            if (h->heap == NULL || (h->caps[prio] & caps) == 0u || (all_caps(h) & caps) != caps) {
                continue;
            }
            void *p = multi_heap_malloc(h->heap, size);
            if (p != NULL) {
                return p;
            }
        }
    }
    return NULL;
}

static heap_t *find_containing_heap(const void *p)
{
    intptr_t a = (intptr_t)p;
    for (heap_t *h = registered_heaps.slh_first; h != NULL; h = h->next.sle_next) {
        if (h->heap != NULL && a >= h->start && a < h->end) {
            return h;
        }
    }
    return NULL;
}

__attribute__((noinline)) void heap_caps_free(void *p)
{
    heap_t *h = find_containing_heap(p);
    if (p != NULL && h != NULL) {
        multi_heap_free(h->heap, p);
    }
}

size_t heap_caps_get_free_size(uint32_t caps)
{
    size_t sum = 0u;
    for (heap_t *h = registered_heaps.slh_first; h != NULL; h = h->next.sle_next) {
        if (h->heap != NULL && (all_caps(h) & caps) == caps) {
            sum += multi_heap_free_size(h->heap);
        }
    }
    return sum;
}

size_t heap_caps_get_minimum_free_size(uint32_t caps)
{
    size_t sum = 0u;
    for (heap_t *h = registered_heaps.slh_first; h != NULL; h = h->next.sle_next) {
        if (h->heap != NULL && (all_caps(h) & caps) == caps) {
            sum += multi_heap_minimum_free_size(h->heap);
        }
    }
    return sum;
}

void heap_caps_get_info(multi_heap_info_t *info, uint32_t caps)
{
    if (info == NULL) {
        return;
    }
    *info = (multi_heap_info_t){0};
    for (heap_t *h = registered_heaps.slh_first; h != NULL; h = h->next.sle_next) {
        if (h->heap == NULL || (all_caps(h) & caps) != caps) {
            continue;
        }
        multi_heap_info_t one;
        multi_heap_get_info(h->heap, &one);
        info->total_free_bytes += one.total_free_bytes;
        info->total_allocated_bytes += one.total_allocated_bytes;
        info->minimum_free_bytes += one.minimum_free_bytes;
        info->allocated_blocks += one.allocated_blocks;
        info->free_blocks += one.free_blocks;
        info->total_blocks += one.total_blocks;
        if (one.largest_free_block > info->largest_free_block) {
            info->largest_free_block = one.largest_free_block;
        }
    }
}

size_t heap_caps_get_largest_free_block(uint32_t caps)
{
    multi_heap_info_t info;
    heap_caps_get_info(&info, caps);
    return info.largest_free_block;
}

bool heap_caps_check_integrity(uint32_t caps, bool print_errors)
{
    bool ok = true;
    for (heap_t *h = registered_heaps.slh_first; h != NULL; h = h->next.sle_next) {
        if (h->heap != NULL && (all_caps(h) & caps) == caps) {
            ok = multi_heap_check(h->heap, print_errors) && ok;
        }
    }
    return ok;
}

bool heap_caps_check_integrity_all(bool print_errors)
{
    return heap_caps_check_integrity(0u, print_errors);
}

/* Not ESP-IDF API: heap i of registered_heaps (registration order), for the
 * firmware view. False when there is no heap i. */
bool heap_caps_registered_info(unsigned i, multi_heap_info_t *info)
{
    for (heap_t *h = registered_heaps.slh_first; h != NULL; h = h->next.sle_next) {
        if (i-- == 0u) {
            multi_heap_get_info(h->heap, info);
            return true;
        }
    }
    return false;
}
