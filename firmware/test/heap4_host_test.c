/* heap4_host_test.c - randomized invariant test of src/heap4.c on the host.
 *
 * Runs 20,000 malloc/free operations with mixed sizes from a fixed-seed PRNG
 * plus edge cases (0, huge, exhaustion, NULL/double free) and, after EVERY
 * operation, re-derives the heap state from the raw arena and compares it
 * with the allocator's own bookkeeping. Built with -DHEAP4_HOST_TEST, which
 * exposes the file-statics through heap4_test_view(). */
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

typedef struct { uint8_t *p; size_t n; uint8_t tag; } live_t;

static live_t g_live[MAX_LIVE];
static int g_nlive;
static unsigned long g_checks, g_failed;
static uint32_t g_rng = 0x2545F491u;

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
    const size_t hs = v.xHeapStructSize;
    uintptr_t start = ((uintptr_t)v.ucHeap + 7) & ~(uintptr_t)7;
    uintptr_t end = (uintptr_t)v.pxEnd;
    CHECK(end + hs <= (uintptr_t)v.ucHeap + v.heap_size, "%s: pxEnd past ucHeap", after);
    CHECK(((const blk_t *)v.pxEnd)->xBlockSize == 0, "%s: pxEnd size != 0", after);

    /* Physical walk: blocks tile [start, pxEnd) exactly. */
    size_t free_sum = 0, nfree_phys = 0, nalloc = 0;
    int prev_free = 0;
    uintptr_t p = start;
    unsigned guard = 0;
    while (p < end && guard++ < 1000000) {
        const blk_t *b = (const blk_t *)p;
        size_t sz = b->xBlockSize & ~MSB;
        if (sz == 0 || (sz & 7) != 0 || p + sz > end) {
            CHECK(0, "%s: bad block size %zu at +%lu", after, sz, (unsigned long)(p - start));
            return;
        }
        if (b->xBlockSize & MSB) {
            CHECK(b->pxNextFreeBlock == NULL, "%s: allocated block with next != NULL", after);
            nalloc++;
            prev_free = 0;
        } else {
            CHECK(!prev_free, "%s: two adjacent free blocks (not coalesced)", after);
            free_sum += sz;
            nfree_phys++;
            prev_free = 1;
        }
        p += sz;
    }
    CHECK(p == end, "%s: physical walk ends at +%lu, pxEnd at +%lu", after,
          (unsigned long)(p - start), (unsigned long)(end - start));
    CHECK(nalloc == (size_t)g_nlive, "%s: %zu allocated blocks, %d live", after, nalloc, g_nlive);

    /* Free list: address ordered, every entry free, ends at pxEnd. */
    const blk_t *xs = (const blk_t *)v.xStart;
    const blk_t *f = xs->pxNextFreeBlock;
    uintptr_t last = 0;
    size_t list_sum = 0, nfree_list = 0;
    guard = 0;
    while (f != (const blk_t *)v.pxEnd && f != NULL && guard++ < 100000) {
        CHECK((uintptr_t)f > last && (uintptr_t)f >= start && (uintptr_t)f < end,
              "%s: free list not address ordered / out of arena", after);
        CHECK((f->xBlockSize & MSB) == 0, "%s: free-list block marked allocated", after);
        list_sum += f->xBlockSize & ~MSB;
        nfree_list++;
        last = (uintptr_t)f;
        f = f->pxNextFreeBlock;
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
        const blk_t *f = ((const blk_t *)before.xStart)->pxNextFreeBlock;
        while (f != NULL && f != (const blk_t *)before.pxEnd) {
            if (f->xBlockSize > largest) largest = f->xBlockSize;
            f = f->pxNextFreeBlock;
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

    /* Edge cases. */
    CHECK(pvPortMalloc(0) == NULL, "malloc(0) must return NULL");
    CHECK(pvPortMalloc((size_t)-1) == NULL, "malloc(SIZE_MAX) must return NULL");
    CHECK(pvPortMalloc(MSB) == NULL, "malloc(MSB) must return NULL");
    CHECK(pvPortMalloc(configTOTAL_HEAP_SIZE) == NULL, "malloc(heap size) must return NULL");
    vPortFree(NULL);
    check_heap("edge");

    /* Exhaustion: fill with 1 KiB blocks until NULL, then free all. */
    while (g_nlive < MAX_LIVE) {
        heap4_view_t v;
        heap4_test_view(&v);
        size_t before = v.xFreeBytesRemaining;
        void *p = pvPortMalloc(1024);
        ops++;
        if (p == NULL) {
            CHECK(before < 1024 + 16, "NULL with %zu free", before);
            break;
        }
        g_live[g_nlive++] = (live_t){p, 0, 0};
        check_heap("exhaust");
    }
    CHECK(g_nlive < MAX_LIVE, "heap never exhausted");
    /* Largest remaining request still fits exactly. */
    {
        heap4_view_t v;
        heap4_test_view(&v);
        if (v.xFreeBytesRemaining > v.xHeapStructSize) {
            void *p = pvPortMalloc(v.xFreeBytesRemaining - v.xHeapStructSize);
            CHECK(p != NULL, "last free block not allocatable");
            if (p) g_live[g_nlive++] = (live_t){p, 0, 0};
            check_heap("last");
            heap4_test_view(&v);
            CHECK(v.xFreeBytesRemaining == 0, "free %zu after taking everything",
                  v.xFreeBytesRemaining);
        }
    }
    while (g_nlive > 0) { do_free((int)(rnd() % (unsigned)g_nlive)); ops++; }
    {
        heap4_view_t v;
        heap4_test_view(&v);
        CHECK(v.xFreeBytesRemaining == (uintptr_t)v.pxEnd - (((uintptr_t)v.ucHeap + 7) & ~(uintptr_t)7),
              "heap not whole again after freeing everything");
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

    printf("heap4 host test: %lu operations, %lu invariant checks\n", ops, g_checks);
    printf("%lu passed, %lu failed\n", g_checks - g_failed, g_failed);
    return g_failed ? 1 : 0;
}
