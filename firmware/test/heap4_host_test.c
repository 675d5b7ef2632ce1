/* heap4_host_test.c - randomized invariant test of src/heap4.c on the host.
 *
 * Runs 20,000 malloc/free operations with mixed sizes from a fixed-seed PRNG
 * plus edge cases (0, huge, exhaustion, NULL/double free) and, after EVERY
 * operation, re-derives the heap state from the raw arena and compares it
 * with the allocator's own bookkeeping and with vPortGetHeapStats. Built with
 * -DHEAP4_HOST_TEST, which exposes the file-statics through heap4_test_view().
 * The same test covers every build option: -DconfigENABLE_HEAP_PROTECTOR=1
 * (links decoded with the canary, allocated links checked against the
 * configured encoding) and -DHEAP5_REGIONS (the firmware's own region table
 * from src/freertos_app.c; per-region walks, region markers in the list). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/heap4.h"

typedef struct A_BLOCK_LINK {
    struct A_BLOCK_LINK *pxNextFreeBlock;
    size_t xBlockSize;
} blk_t;

#define MSB (((size_t)1) << (sizeof(size_t) * 8 - 1))
#define MAX_LIVE 256
#define OPS 20000

#if configENABLE_HEAP_PROTECTOR
#define VARIANT_P "p"
#else
#define VARIANT_P ""
#endif
#ifdef HEAP5_REGIONS
#define VARIANT "heap5" VARIANT_P
extern const HeapRegion_t xHeapRegions[];
#else
#define VARIANT "heap4" VARIANT_P
#endif

typedef struct { uint8_t *p; size_t n; uint8_t tag; } live_t;

static live_t g_live[MAX_LIVE];
static int g_nlive;
static unsigned long g_checks, g_failed;
static uint32_t g_rng = 0x2545F491u;
static size_t g_total; /* free bytes of the empty heap */

static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return g_rng;
}

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        g_checks++;                                                       \
        if (!(cond)) {                                                    \
            g_failed++;                                                   \
            if (g_failed < 20) {                                          \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);      \
                fprintf(stderr, __VA_ARGS__);                             \
                fputc('\n', stderr);                                      \
            }                                                             \
        }                                                                 \
    } while (0)

/* A stored link, decoded with the canary (0 without the protector). */
static const blk_t *link_of(const blk_t *b, const heap4_view_t *v)
{
    return (const blk_t *)((uintptr_t)b->pxNextFreeBlock ^ v->xHeapCanary);
}

/* What an allocated block's link must hold in this build. */
static uintptr_t allocated_link(const heap4_view_t *v)
{
#if configENABLE_HEAP_PROTECTOR && configHEAP_PROTECT_ALLOCATED
    return v->xHeapCanary;
#else
    (void)v;
    return 0;
#endif
}

/* The regions as the allocator carves them: [start, marker). */
typedef struct { uintptr_t start, marker; } region_t;
static int regions(const heap4_view_t *v, region_t *out)
{
    const size_t hs = v->xHeapStructSize;
#ifdef HEAP5_REGIONS
    int n = 0;
    for (const HeapRegion_t *r = xHeapRegions; r->xSizeInBytes > 0; r++) {
        uintptr_t s = ((uintptr_t)r->pucStartAddress + 7) & ~(uintptr_t)7;
        size_t size = r->xSizeInBytes - (s - (uintptr_t)r->pucStartAddress);
        out[n].start = s;
        out[n].marker = (s + size - hs) & ~(uintptr_t)7;
        n++;
    }
    return n;
#else
    out[0].start = ((uintptr_t)v->ucHeap + 7) & ~(uintptr_t)7;
    out[0].marker = ((uintptr_t)v->ucHeap + v->heap_size - hs) & ~(uintptr_t)7;
    return 1;
#endif
}

/* Walk the arena physically and through the free list; compare with the
 * counters and with what the test believes is live. */
static void check_heap(const char *after)
{
    heap4_view_t v;
    heap4_test_view(&v);
    if (v.pxEnd == NULL) {
        CHECK(g_nlive == 0, "%s: uninitialised heap with live blocks", after);
        return;
    }
    region_t reg[8];
    const int nreg = regions(&v, reg);
    uintptr_t end = (uintptr_t)v.pxEnd;
    CHECK(end == reg[nreg - 1].marker, "%s: pxEnd is not the last region's marker", after);
    CHECK(((const blk_t *)v.pxEnd)->xBlockSize == 0, "%s: pxEnd size != 0", after);
    CHECK(link_of((const blk_t *)v.pxEnd, &v) == NULL, "%s: pxEnd link != protected NULL", after);

    /* Physical walk: per region, blocks tile [start, marker) exactly. */
    size_t free_sum = 0, nfree_phys = 0, nalloc = 0, largest = 0, smallest = SIZE_MAX;
    unsigned guard = 0;
    for (int r = 0; r < nreg; r++) {
        int prev_free = 0;
        uintptr_t p = reg[r].start;
        while (p < reg[r].marker && guard++ < 1000000) {
            const blk_t *b = (const blk_t *)p;
            size_t sz = b->xBlockSize & ~MSB;
            if (sz == 0 || (sz & 7) != 0 || p + sz > reg[r].marker) {
                CHECK(0, "%s: bad block size %zu at +%lu", after, sz,
                      (unsigned long)(p - reg[r].start));
                return;
            }
            if (b->xBlockSize & MSB) {
                CHECK((uintptr_t)b->pxNextFreeBlock == allocated_link(&v),
                      "%s: allocated block's link %p", after, (void *)b->pxNextFreeBlock);
                nalloc++;
                prev_free = 0;
            } else {
                CHECK(!prev_free, "%s: two adjacent free blocks (not coalesced)", after);
                free_sum += sz;
                nfree_phys++;
                prev_free = 1;
                if (sz > largest) largest = sz;
                if (sz < smallest) smallest = sz;
            }
            p += sz;
        }
        CHECK(p == reg[r].marker, "%s: region %d walk ends at +%lu, marker at +%lu", after, r,
              (unsigned long)(p - reg[r].start), (unsigned long)(reg[r].marker - reg[r].start));
        CHECK(((const blk_t *)reg[r].marker)->xBlockSize == 0, "%s: marker %d size != 0",
              after, r);
    }
    CHECK(nalloc == (size_t)g_nlive, "%s: %zu allocated blocks, %d live", after, nalloc, g_nlive);

    /* Free list: address ordered, every entry free, ends at pxEnd; a size-0
     * entry is a region marker (heap_5 only). */
    const blk_t *f = link_of((const blk_t *)v.xStart, &v);
    uintptr_t last = 0;
    size_t list_sum = 0, nfree_list = 0, nmarkers = 0;
    guard = 0;
    while (f != (const blk_t *)v.pxEnd && f != NULL && guard++ < 100000) {
        CHECK((uintptr_t)f > last && (uintptr_t)f >= reg[0].start && (uintptr_t)f < end,
              "%s: free list not address ordered / out of arena", after);
        CHECK((f->xBlockSize & MSB) == 0, "%s: free-list block marked allocated", after);
        if (f->xBlockSize == 0) {
            int is_marker = 0;
            for (int r = 0; r < nreg - 1; r++) is_marker |= (uintptr_t)f == reg[r].marker;
            CHECK(is_marker, "%s: zero-size free-list entry that is no region marker", after);
            nmarkers++;
        } else {
            list_sum += f->xBlockSize & ~MSB;
            nfree_list++;
        }
        last = (uintptr_t)f;
        f = link_of(f, &v);
    }
    CHECK(f == (const blk_t *)v.pxEnd, "%s: free list does not end at pxEnd", after);
    CHECK(nfree_list == nfree_phys, "%s: %zu on list, %zu free physically", after, nfree_list,
          nfree_phys);
    CHECK(list_sum == free_sum, "%s: list sum %zu != physical %zu", after, list_sum, free_sum);
    CHECK(v.xFreeBytesRemaining == free_sum, "%s: xFreeBytesRemaining %zu != %zu", after,
          v.xFreeBytesRemaining, free_sum);
    CHECK(v.xMinimumEverFreeBytesRemaining <= v.xFreeBytesRemaining, "%s: min-ever > free",
          after);
    CHECK(v.xNumberOfSuccessfulAllocations - v.xNumberOfSuccessfulFrees == nalloc,
          "%s: counters disagree with walk", after);

    /* The firmware's own statistics agree with the walk (markers counted). */
    HeapStats_t st;
    vPortGetHeapStats(&st);
    CHECK(st.xAvailableHeapSpaceInBytes == free_sum, "%s: stats available", after);
    CHECK(st.xSizeOfLargestFreeBlockInBytes == largest, "%s: stats largest %zu != %zu", after,
          st.xSizeOfLargestFreeBlockInBytes, largest);
    CHECK(st.xSizeOfSmallestFreeBlockInBytes == smallest, "%s: stats smallest %zu != %zu",
          after, st.xSizeOfSmallestFreeBlockInBytes, smallest);
    CHECK(st.xNumberOfFreeBlocks == nfree_list + nmarkers, "%s: stats blocks %zu != %zu + %zu",
          after, st.xNumberOfFreeBlocks, nfree_list, nmarkers);
    CHECK(st.xMinimumEverFreeBytesRemaining == xPortGetMinimumEverFreeHeapSize() &&
              st.xAvailableHeapSpaceInBytes == xPortGetFreeHeapSize(),
          "%s: stats disagree with the getters", after);
    CHECK(st.xNumberOfSuccessfulAllocations == v.xNumberOfSuccessfulAllocations &&
              st.xNumberOfSuccessfulFrees == v.xNumberOfSuccessfulFrees,
          "%s: stats counters", after);

    /* Payload patterns intact => no overlap between live allocations. */
    for (int i = 0; i < g_nlive; i++) {
        const live_t *l = &g_live[i];
        size_t bad = 0;
        for (size_t k = 0; k < l->n; k++) bad += l->p[k] != (uint8_t)(l->tag + k);
        CHECK(bad == 0, "%s: payload of live block %d overwritten", after, i);
    }
}

static void do_alloc(size_t n)
{
    heap4_view_t before;
    heap4_test_view(&before);
    uint8_t *p = pvPortMalloc(n);
    if (p != NULL) {
        heap4_view_t v;
        heap4_test_view(&v);
        CHECK(((uintptr_t)p & 7) == 0, "pointer %p not 8-aligned", (void *)p);
        const blk_t *b = (const blk_t *)(p - v.xHeapStructSize);
        CHECK((b->xBlockSize & ~MSB) >= n + v.xHeapStructSize, "block too small for %zu", n);
        CHECK((b->xBlockSize & ~MSB) <= ((n + v.xHeapStructSize + 7) & ~(size_t)7) +
                                               2 * v.xHeapStructSize,
              "block of %zu too big for %zu", b->xBlockSize & ~MSB, n);
        if (g_nlive < MAX_LIVE) {
            uint8_t tag = (uint8_t)rnd();
            for (size_t k = 0; k < n; k++) p[k] = (uint8_t)(tag + k);
            g_live[g_nlive++] = (live_t){p, n, tag};
        } else {
            vPortFree(p);
        }
    } else {
        /* NULL is only allowed when no free block can hold the request. */
        size_t need = (n + before.xHeapStructSize + 7) & ~(size_t)7, largest = 0;
        const blk_t *f = link_of((const blk_t *)before.xStart, &before);
        while (f != NULL && f != (const blk_t *)before.pxEnd) {
            if (f->xBlockSize > largest) largest = f->xBlockSize;
            f = link_of(f, &before);
        }
        CHECK(n == 0 || largest < need, "NULL for %zu with a %zu-byte free block", n, largest);
    }
    check_heap("alloc");
}

static void do_free(int i)
{
    vPortFree(g_live[i].p);
    g_live[i] = g_live[--g_nlive];
    check_heap("free");
}

int main(void)
{
    unsigned long ops = 0;
    check_heap("start");
#ifdef HEAP5_REGIONS
    CHECK(pvPortMalloc(8) == NULL, "malloc before vPortDefineHeapRegions must return NULL");
    vPortDefineHeapRegions(xHeapRegions);
    check_heap("define");
    {
        /* Right after definition every marker but pxEnd is in the list. */
        HeapStats_t st;
        vPortGetHeapStats(&st);
        CHECK(st.xNumberOfFreeBlocks == 5, "fresh heap_5: %zu free-list entries, want 3 + 2",
              st.xNumberOfFreeBlocks);
    }
#else
    vPortFree(pvPortMalloc(8)); /* heap_4 builds itself lazily */
#endif
    {
        heap4_view_t v;
        heap4_test_view(&v);
        g_total = v.xFreeBytesRemaining;
    }

    /* Edge cases. */
    CHECK(pvPortMalloc(0) == NULL, "malloc(0) must return NULL");
    CHECK(pvPortMalloc((size_t)-1) == NULL, "malloc(SIZE_MAX) must return NULL");
    CHECK(pvPortMalloc(MSB) == NULL, "malloc(MSB) must return NULL");
    CHECK(pvPortMalloc(configTOTAL_HEAP_SIZE) == NULL, "malloc(heap size) must return NULL");
    vPortFree(NULL);
    check_heap("edge");

    /* Exhaustion: fill with 1 KiB blocks until NULL, then free all. */
    while (g_nlive < MAX_LIVE) {
        HeapStats_t st;
        vPortGetHeapStats(&st);
        void *p = pvPortMalloc(1024);
        ops++;
        if (p == NULL) {
            CHECK(st.xSizeOfLargestFreeBlockInBytes < 1024 + 16, "NULL with a %zu-byte free block",
                  st.xSizeOfLargestFreeBlockInBytes);
            break;
        }
        g_live[g_nlive++] = (live_t){p, 0, 0};
        check_heap("exhaust");
    }
    CHECK(g_nlive < MAX_LIVE, "heap never exhausted");
    /* The largest remaining free block is still allocatable exactly (one
     * per region on heap_5), until nothing is left. */
    for (int k = 0; k < 8; k++) {
        HeapStats_t st;
        vPortGetHeapStats(&st);
        if (st.xSizeOfLargestFreeBlockInBytes <= 8 + 16) break;
        void *p = pvPortMalloc(st.xSizeOfLargestFreeBlockInBytes - 16);
        CHECK(p != NULL, "largest free block (%zu) not allocatable",
              st.xSizeOfLargestFreeBlockInBytes);
        if (p) g_live[g_nlive++] = (live_t){p, 0, 0};
        check_heap("last");
    }
    while (g_nlive > 0) { do_free((int)(rnd() % (unsigned)g_nlive)); ops++; }
    {
        heap4_view_t v;
        heap4_test_view(&v);
        CHECK(v.xFreeBytesRemaining == g_total, "heap not whole again after freeing everything");
    }

    /* Double free is refused without damage. */
    {
        void *p = pvPortMalloc(40);
        vPortFree(p);
        vPortFree(p);
        check_heap("double free");
    }

    /* Random mix: mostly small, some medium, rare large. */
    for (int i = 0; i < OPS; i++, ops++) {
        uint32_t r = rnd();
        if (g_nlive > 0 && (r % 100) < (g_nlive > 100 ? 60u : 45u)) {
            do_free((int)(rnd() % (unsigned)g_nlive));
        } else {
            uint32_t c = rnd() % 100;
            size_t n = c < 60 ? 1 + rnd() % 64 : c < 90 ? 65 + rnd() % 1024
                                               : c < 99 ? 1024 + rnd() % 8192
                                                        : 8192 + rnd() % 40000;
            do_alloc(n);
        }
    }
    while (g_nlive > 0) { do_free(g_nlive - 1); ops++; }

    printf(VARIANT " host test: %lu operations, %lu invariant checks\n", ops, g_checks);
    printf("%lu passed, %lu failed\n", g_checks - g_failed, g_failed);
    return g_failed ? 1 : 0;
}
