/* tlsf_host_test.c - randomized invariant test of src/tlsf.c, multi_heap.c and
 * heap_caps.c on the host (built twice: dynamic and -DTLSF_FIXED_CONTROL).
 *
 * Edge cases, then 20,000 random heap_caps_malloc/heap_caps_free operations
 * with mixed sizes and capabilities from a fixed-seed PRNG. After EVERY
 * operation the test re-derives each registered heap's state from raw memory
 * the way a debugger would (docs/allocators/esp-idf-tlsf.md): registered_heaps list,
 * region header, control geometry, physical block walk, free lists against
 * both bitmaps, the list each free block must be in, the free_bytes formula
 * and minimum_free_bytes, and the payload of every live allocation. The
 * geometry and the list mapping are recomputed here from the layout facts,
 * not taken from tlsf.c. On a 64-bit host words are 8 bytes, so every "4" of
 * the target becomes sizeof(size_t). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/heap_caps.h"
#include "../src/multi_heap.h"
#include "../src/tlsf.h"
#include "../src/tlsf_control.h"

/* The registered-heap and per-heap structs, as a debugger knows them. */
struct heap_t_ {
    uint32_t caps[3];
    intptr_t start;
    intptr_t end;
    multi_heap_lock_t heap_mux;
    multi_heap_handle_t heap;
    struct {
        struct heap_t_ *sle_next;
    } next;
};
extern struct registered_heap_ll {
    struct heap_t_ *slh_first;
} registered_heaps;

struct multi_heap_info {
    void *lock;
    size_t free_bytes;
    size_t minimum_free_bytes;
    size_t pool_size;
    void *heap_data;
};

#define W sizeof(size_t) /* the target's 4 */
#define FREE_BIT ((size_t)1)
#define PREV_FREE_BIT ((size_t)2)
#define MIN_BLOCK (3 * W)
#define MAX_HEAPS 2
#define MAX_LIVE 400
#define OPS 20000
#define WALK_CAP 100000u

typedef struct {
    uint8_t *p;
    size_t n;
    uint8_t tag;
} live_t;

static live_t g_live[MAX_LIVE];
static int g_nlive;
static unsigned long g_checks, g_failed;
static uint32_t g_rng = 0x9E3779B9u;
static size_t g_min_seen[MAX_HEAPS]; /* lowest free_bytes observed per heap */

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

static unsigned top_bit(size_t x)
{
    unsigned t = 0;
    while (x >>= 1) t++;
    return t;
}

/* Geometry a debugger reads (dynamic) or knows (fixed). */
typedef struct {
    unsigned fl_count, sl_count, sl_log2, fl_shift;
    size_t small, ctl_size;
} geom_t;

static geom_t expected_geom(size_t pool_size)
{
    geom_t g;
#ifdef TLSF_FIXED_CONTROL
    (void)pool_size;
    g.sl_log2 = 5;
    g.fl_shift = 5 + (W == 8 ? 3 : 2);
    g.fl_count = 16 - g.fl_shift + 1;
    size_t head = 4 * W + 4 + 4 * (size_t)g.fl_count; /* block_null, fl_bitmap, sl_bitmap */
    head = (head + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
    g.ctl_size = head + (size_t)g.fl_count * 32 * sizeof(void *);
#else
    unsigned fl_max = top_bit(pool_size) + 1;
    g.sl_log2 = pool_size <= 16384 ? 3 : pool_size <= 262144 ? 4 : 5;
    g.fl_shift = g.sl_log2 + (W == 8 ? 3 : 2);
    g.fl_count = fl_max - g.fl_shift + 1;
    size_t head = sizeof(control_t) + 4 * (size_t)g.fl_count;
    head = (head + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
    g.ctl_size = head + (size_t)g.fl_count * ((size_t)1 << g.sl_log2) * sizeof(void *);
#endif
    g.sl_count = 1u << g.sl_log2;
    g.small = (size_t)1 << g.fl_shift;
    return g;
}

/* The list a free block of `size` must be on. */
static void list_of(const geom_t *g, size_t size, unsigned *fl, unsigned *sl)
{
    if (size < g->small) {
        *fl = 0;
        *sl = (unsigned)(size / (g->small / g->sl_count));
        return;
    }
    unsigned t = top_bit(size);
    *fl = t - g->fl_shift + 1;
    *sl = (unsigned)((size >> (t - g->sl_log2)) - g->sl_count);
}

/* Largest request a free block of `size` serves under good fit: the lower
 * bound of its list. */
static size_t fit_of(const geom_t *g, size_t size)
{
    if (size < g->small) return size;
    size_t slice = (size_t)1 << (top_bit(size) - g->sl_log2);
    return size / slice * slice;
}

static block_header_t **head_of(control_t *c, const geom_t *g, unsigned fl, unsigned sl)
{
#ifdef TLSF_FIXED_CONTROL
    (void)g;
    return &c->blocks[fl][sl];
#else
    return &c->blocks[fl * g->sl_count + sl];
#endif
}

static unsigned *slmap_of(control_t *c)
{
    return c->sl_bitmap;
}

static size_t bsize(const block_header_t *b)
{
    return b->size & ~(FREE_BIT | PREV_FREE_BIT);
}

/* What one heap looks like after the walk. */
typedef struct {
    struct heap_t_ *h;
    geom_t g;
    size_t nfree, nused, free_sum, largest;
} heapstat_t;

static int g_nheaps;
static heapstat_t g_stat[MAX_HEAPS];
static void *g_used[MAX_HEAPS][MAX_LIVE + 8];

/* Walks heap i; fills g_stat[i] and g_used[i]. Returns 0 if the walk broke. */
static int check_one_heap(int i, struct heap_t_ *h, const char *after)
{
    heapstat_t *s = &g_stat[i];
    memset(s, 0, sizeof(*s));
    s->h = h;
    struct multi_heap_info *info = (struct multi_heap_info *)h->heap;
    CHECK((intptr_t)info == h->start, "%s: heap %d: handle is not the region start", after, i);
    CHECK(info->lock == (void *)&h->heap_mux, "%s: heap %d: lock is not &heap_mux", after, i);
    CHECK(h->heap_mux.owner == SPINLOCK_FREE && h->heap_mux.count == 0,
          "%s: heap %d: lock held outside an operation", after, i);
    CHECK(info->pool_size == (size_t)(h->end - h->start) - sizeof(*info),
          "%s: heap %d: pool_size %zu", after, i, info->pool_size);
    CHECK((uintptr_t)info->heap_data == (uintptr_t)h->start + sizeof(*info),
          "%s: heap %d: heap_data not right after the header", after, i);

    control_t *c = info->heap_data;
    geom_t g = expected_geom(info->pool_size);
    s->g = g;
#ifndef TLSF_FIXED_CONTROL
    CHECK(c->fl_index_count == g.fl_count && c->sl_index_count == g.sl_count &&
              c->sl_index_count_log2 == g.sl_log2 && c->fl_index_shift == g.fl_shift &&
              c->small_block_size == g.small && c->fl_index_max == top_bit(info->pool_size) + 1,
          "%s: heap %d: control geometry", after, i);
    CHECK(c->size == g.ctl_size, "%s: heap %d: control size %zu != %zu", after, i, c->size,
          g.ctl_size);
    CHECK((uintptr_t)c->sl_bitmap == (uintptr_t)(c + 1), "%s: sl_bitmap not after control_t",
          after);
    CHECK((uintptr_t)c->blocks >= (uintptr_t)(c->sl_bitmap + g.fl_count) &&
              (uintptr_t)c->blocks < (uintptr_t)(c->sl_bitmap + g.fl_count) + sizeof(void *),
          "%s: blocks not after sl_bitmap", after);
#else
    CHECK(sizeof(control_t) == g.ctl_size, "fixed control_t is %zu bytes, expected %zu",
          sizeof(control_t), g.ctl_size);
#endif
    CHECK(tlsf_size(c) == g.ctl_size, "%s: tlsf_size", after);
    CHECK(c->block_null.next_free == &c->block_null && c->block_null.prev_free == &c->block_null,
          "%s: heap %d: block_null links changed", after, i);

    /* Physical walk: pool - W, += W + size, until the zero-size sentinel. */
    uintptr_t pool = (uintptr_t)c + g.ctl_size;
    uintptr_t pool_end = (uintptr_t)h->end;
    block_header_t *b = (block_header_t *)(pool - W), *prev = NULL;
    unsigned guard = 0;
    while (guard++ < WALK_CAP) {
        size_t sz = bsize(b);
        uintptr_t size_word = (uintptr_t)b + W;
        if (size_word + W > pool_end || (sz % W) != 0) {
            CHECK(0, "%s: heap %d: block at +%lu out of the pool or misaligned", after, i,
                  (unsigned long)((uintptr_t)b - pool));
            return 0;
        }
        int prev_free = prev != NULL && (prev->size & FREE_BIT);
        CHECK(((b->size & PREV_FREE_BIT) != 0) == prev_free, "%s: heap %d: prev-free bit wrong",
              after, i);
        if (prev_free) {
            CHECK(b->prev_phys_block == prev, "%s: heap %d: prev_phys_block wrong", after, i);
        }
        if (sz == 0) {
            CHECK((b->size & FREE_BIT) == 0, "%s: sentinel marked free", after);
            CHECK(pool_end - (size_word + W) < W, "%s: heap %d: sentinel %lu bytes before end",
                  after, i, (unsigned long)(pool_end - (size_word + W)));
            break;
        }
        CHECK(sz >= MIN_BLOCK, "%s: heap %d: block of %zu below minimum", after, i, sz);
        if (b->size & FREE_BIT) {
            CHECK(!prev_free, "%s: heap %d: two adjacent free blocks", after, i);
            s->nfree++;
            s->free_sum += sz;
            if (sz > s->largest) s->largest = sz;
        } else if (s->nused < MAX_LIVE + 8) {
            g_used[i][s->nused++] = (uint8_t *)b + 2 * W;
        }
        prev = b;
        b = (block_header_t *)((uintptr_t)b + W + sz);
    }
    CHECK(guard < WALK_CAP, "%s: heap %d: walk did not end", after, i);

    /* Free lists against bitmaps and mapping. */
    size_t listed = 0;
    for (unsigned fl = 0; fl < 32; fl++) {
        int fl_bit = (c->fl_bitmap >> fl) & 1u;
        if (fl >= g.fl_count) {
            CHECK(!fl_bit, "%s: fl_bitmap bit %u beyond fl_index_count", after, fl);
            continue;
        }
        unsigned slmap = slmap_of(c)[fl];
        CHECK(fl_bit == (slmap != 0), "%s: heap %d: fl_bitmap bit %u vs sl_bitmap", after, i, fl);
        CHECK(g.sl_count == 32 || (slmap >> g.sl_count) == 0, "%s: sl bits beyond count", after);
        for (unsigned sl = 0; sl < g.sl_count; sl++) {
            block_header_t *f = *head_of(c, &g, fl, sl), *back = &c->block_null;
            CHECK(((slmap >> sl) & 1u) == (f != &c->block_null),
                  "%s: heap %d: sl_bitmap[%u] bit %u vs list", after, i, fl, sl);
            unsigned n = 0;
            while (f != &c->block_null && n++ < WALK_CAP) {
                if ((uintptr_t)f < pool - W || (uintptr_t)f >= pool_end) {
                    CHECK(0, "%s: heap %d: free-list pointer outside the pool", after, i);
                    return 0;
                }
                unsigned efl, esl;
                list_of(&g, bsize(f), &efl, &esl);
                CHECK(efl == fl && esl == sl, "%s: heap %d: block of %zu on list (%u,%u), not (%u,%u)",
                      after, i, bsize(f), fl, sl, efl, esl);
                CHECK((f->size & FREE_BIT) && !(f->size & PREV_FREE_BIT),
                      "%s: listed block not free / prev free", after);
                const block_header_t *nx = (const block_header_t *)((uintptr_t)f + W + bsize(f));
                CHECK(!(nx->size & FREE_BIT) && (nx->size & PREV_FREE_BIT) && nx->prev_phys_block == f,
                      "%s: next of a listed block inconsistent", after);
                CHECK(f->prev_free == back, "%s: prev_free link broken", after);
                back = f;
                f = f->next_free;
                listed++;
            }
        }
    }
    CHECK(listed == s->nfree, "%s: heap %d: %zu listed, %zu free physically", after, i, listed,
          s->nfree);

    /* Accounting. */
    CHECK(info->free_bytes == s->free_sum + W * (s->nfree + 1),
          "%s: heap %d: free_bytes %zu != %zu + %zu*(%zu+1)", after, i, info->free_bytes,
          s->free_sum, W, s->nfree);
    if (info->free_bytes < g_min_seen[i]) g_min_seen[i] = info->free_bytes;
    CHECK(info->minimum_free_bytes == g_min_seen[i], "%s: heap %d: minimum_free_bytes %zu != %zu",
          after, i, info->minimum_free_bytes, g_min_seen[i]);
    return 1;
}

static int find_heap(const void *p)
{
    for (int i = 0; i < g_nheaps; i++) {
        if ((intptr_t)p >= g_stat[i].h->start && (intptr_t)p < g_stat[i].h->end) return i;
    }
    return -1;
}

static void check_heaps(const char *after)
{
    int n = 0;
    for (struct heap_t_ *h = registered_heaps.slh_first; h != NULL && n <= MAX_HEAPS;
         h = h->next.sle_next, n++) {
        if (n < MAX_HEAPS && !check_one_heap(n, h, after)) return;
    }
    CHECK(n == g_nheaps, "%s: %d registered heaps, expected %d", after, n, g_nheaps);

    /* Every live allocation is a used block, the only other used block is
     * the heap table at the start of heap 0, and no payload was touched. */
    size_t used = 0;
    for (int i = 0; i < g_nheaps; i++) used += g_stat[i].nused;
    CHECK(used == (size_t)g_nlive + 1, "%s: %zu used blocks, %d live + 1", after, used, g_nlive);
    CHECK(g_nheaps == 0 || (g_stat[0].nused > 0 &&
                            g_used[0][0] == (void *)registered_heaps.slh_first),
          "%s: heap table is not heap 0's first block", after);
    for (int k = 0; k < g_nlive; k++) {
        const live_t *l = &g_live[k];
        int i = find_heap(l->p), found = 0;
        for (size_t u = 0; i >= 0 && u < g_stat[i].nused && !found; u++) {
            found = g_used[i][u] == l->p;
        }
        CHECK(found, "%s: live block %p is not a used block", after, (void *)l->p);
        size_t bad = 0;
        for (size_t j = 0; j < l->n; j++) bad += l->p[j] != (uint8_t)(l->tag + j);
        CHECK(bad == 0, "%s: payload of live block %d overwritten", after, k);
    }
}

static int eligible(const struct heap_t_ *h, int prio, uint32_t caps)
{
    uint32_t all = h->caps[0] | h->caps[1] | h->caps[2];
    return (h->caps[prio] & caps) != 0 && (all & caps) == caps;
}

/* The heap heap_caps_malloc must use: first by priority, then list order,
 * that has a free block whose fit is at least the (aligned) request. */
static int expected_heap(size_t n, uint32_t caps)
{
    size_t need = (n + W - 1) / W * W;
    if (need < MIN_BLOCK) need = MIN_BLOCK;
    for (int prio = 0; prio < 3; prio++) {
        for (int i = 0; i < g_nheaps; i++) {
            if (eligible(g_stat[i].h, prio, caps) && fit_of(&g_stat[i].g, g_stat[i].largest) >= need)
                return i;
        }
    }
    return -1;
}

static void do_alloc(size_t n, uint32_t caps)
{
    int want = n == 0 ? -1 : expected_heap(n, caps);
    uint8_t *p = heap_caps_malloc(n, caps);
    int got = p != NULL ? find_heap(p) : -1;
    CHECK(got == want, "malloc(%zu, 0x%x): heap %d, expected %d", n, (unsigned)caps, got, want);
    if (p != NULL) {
        CHECK((uintptr_t)p % W == 0, "pointer %p not word aligned", (void *)p);
        size_t need = (n + W - 1) / W * W, have = tlsf_block_size(p);
        if (need < MIN_BLOCK) need = MIN_BLOCK;
        CHECK(have >= need && have < need + sizeof(block_header_t),
              "block of %zu for a request of %zu", have, n);
        if (g_nlive < MAX_LIVE) {
            uint8_t tag = (uint8_t)rnd();
            for (size_t k = 0; k < n; k++) p[k] = (uint8_t)(tag + k);
            g_live[g_nlive++] = (live_t){p, n, tag};
        } else {
            heap_caps_free(p);
        }
    }
    check_heaps("alloc");
}

static void do_free(int k)
{
    heap_caps_free(g_live[k].p);
    g_live[k] = g_live[--g_nlive];
    check_heaps("free");
}

static size_t free_of(int i)
{
    return ((struct multi_heap_info *)g_stat[i].h->heap)->free_bytes;
}

/* One heap on a local buffer: geometry of a 40,000-byte region, exact fit,
 * exhaustion with small blocks, whole again after freeing. */
static void single_heap_cases(void)
{
    static size_t buf[40000 / sizeof(size_t)];
    CHECK(multi_heap_register(buf, sizeof(struct multi_heap_info)) == NULL,
          "a region without room for a pool must be refused");
    CHECK(multi_heap_register((uint8_t *)buf + 1, 1000) == NULL, "unaligned region accepted");
    multi_heap_handle_t hh = multi_heap_register(buf, sizeof(buf));
    CHECK(hh != NULL, "40000-byte region refused");
    if (hh == NULL) return;
    struct multi_heap_info *info = (struct multi_heap_info *)hh;
    geom_t g = expected_geom(info->pool_size);
    size_t pool_bytes = info->pool_size - g.ctl_size;
    size_t first = (pool_bytes - 2 * W) / W * W;
    CHECK(info->free_bytes == pool_bytes, "init: free_bytes %zu != pool %zu", info->free_bytes,
          pool_bytes);
    CHECK(info->free_bytes == first + 2 * W, "init: free_bytes != first block + 2 words");
#ifndef TLSF_FIXED_CONTROL
    if (W == 4) {
        control_t *c = info->heap_data;
        CHECK(c->fl_index_count == 11 && c->sl_index_count == 16 && c->size == 784,
              "40000-byte region: fl %u sl %u size %zu (docs/allocators/esp-idf-tlsf.md: 11, 16, 784)",
              c->fl_index_count, c->sl_index_count, c->size);
    }
#endif
    multi_heap_info_t mi;
    multi_heap_get_info(hh, &mi);
    CHECK(mi.free_blocks == 1 && mi.allocated_blocks == 0 && mi.total_blocks == 1 &&
              mi.largest_free_block == fit_of(&g, first) && mi.total_allocated_bytes == 0,
          "get_info on a fresh heap");
    /* Good fit: the fit size is served, one word more is not (single block). */
    void *p = multi_heap_malloc(hh, fit_of(&g, first) + W);
    CHECK(p == NULL, "request above the fit size of the only block was served");
    p = multi_heap_malloc(hh, fit_of(&g, first));
    CHECK(p != NULL, "fit size of the only block not served");
    multi_heap_free(hh, p);
    CHECK(info->free_bytes == pool_bytes, "not whole after fit-size round trip");
    CHECK(multi_heap_malloc(hh, 0) == NULL, "malloc(0) must return NULL");
    CHECK(multi_heap_malloc(hh, (size_t)-1) == NULL, "malloc(SIZE_MAX) must return NULL");

    /* Exhaustion with minimal blocks, then free every other, then the rest. */
    static void *blocks[4000];
    int n = 0;
    while (n < 4000 && (blocks[n] = multi_heap_malloc(hh, 1)) != NULL) {
        CHECK(tlsf_block_size(blocks[n]) >= MIN_BLOCK, "minimal block too small");
        n++;
    }
    CHECK(n > 0 && n < 4000, "exhaustion: %d blocks", n);
    CHECK(info->free_bytes < MIN_BLOCK + 2 * W, "exhausted heap still has %zu free",
          info->free_bytes);
    CHECK(info->minimum_free_bytes == info->free_bytes, "minimum not the exhausted value");
    size_t low = info->free_bytes, back = 0;
    for (int k = 0; k < n; k += 2) {
        back += tlsf_block_size(blocks[k]) + W;
        multi_heap_free(hh, blocks[k]);
    }
    multi_heap_get_info(hh, &mi);
    CHECK(mi.free_blocks >= (size_t)n / 2 - 1 && mi.allocated_blocks == (size_t)n / 2,
          "every other block freed: %zu free, %zu used", mi.free_blocks, mi.allocated_blocks);
    CHECK(info->free_bytes == low + back, "free_bytes after freeing every other block");
    for (int k = 1; k < n; k += 2) multi_heap_free(hh, blocks[k]);
    multi_heap_get_info(hh, &mi);
    CHECK(info->free_bytes == pool_bytes && mi.free_blocks == 1 && mi.total_blocks == 1,
          "heap not whole again: free %zu, %zu blocks", info->free_bytes, mi.total_blocks);
    CHECK(info->minimum_free_bytes == low, "minimum_free_bytes forgot the low point");
}

#ifdef TLSF_TEST_ON_TARGET
/* The 32-bit run on QEMU: stdio through semihosting (rdimon); startup.c's
 * fault handlers report through fw_fail. */
extern void initialise_monitor_handles(void);
__attribute__((noreturn)) void fw_fail(const char *why, uint32_t code)
{
    printf("target fault: %s\n", why);
    exit((int)code);
}
__attribute__((noreturn)) void fw_halted(void)
{
    exit(1); /* main returned: exit() is how this test ends */
}
#endif

int main(void)
{
    unsigned long ops = 0;
#ifdef TLSF_TEST_ON_TARGET
    initialise_monitor_handles();
#endif
    single_heap_cases();

    /* Before heap_caps_init nothing is registered and nothing is served. */
    CHECK(registered_heaps.slh_first == NULL, "heaps registered before init");
    CHECK(heap_caps_malloc(16, MALLOC_CAP_DEFAULT) == NULL, "malloc before init");
    heap_caps_init();
    heap_caps_init(); /* a second call must not register again */
    g_nheaps = 2;
    for (int i = 0; i < MAX_HEAPS; i++) g_min_seen[i] = (size_t)-1;
    check_heaps("init");
    {
        struct heap_t_ *h0 = registered_heaps.slh_first;
        struct heap_t_ *h1 = h0 ? h0->next.sle_next : NULL;
        CHECK(h0 && h1 && h0->end - h0->start == TLSF_REGION0_SIZE &&
                  h1->end - h1->start == TLSF_REGION1_SIZE,
              "region sizes");
        CHECK(h0 && (h0->caps[0] | h0->caps[1] | h0->caps[2]) ==
                        (MALLOC_CAP_8BIT | MALLOC_CAP_32BIT | MALLOC_CAP_DMA |
                         MALLOC_CAP_INTERNAL | MALLOC_CAP_DEFAULT),
              "heap 0 caps");
        CHECK(h1 && (h1->caps[0] & MALLOC_CAP_SPIRAM) && !((h1->caps[0] | h1->caps[1] | h1->caps[2]) &
                                                           (MALLOC_CAP_DMA | MALLOC_CAP_INTERNAL)),
              "heap 1 caps");
        CHECK(heap_caps_get_free_size(MALLOC_CAP_DEFAULT) == free_of(0) + free_of(1),
              "get_free_size(DEFAULT) != sum of free_bytes");
        CHECK(heap_caps_get_free_size(MALLOC_CAP_DMA) == free_of(0), "get_free_size(DMA)");
        CHECK(heap_caps_get_free_size(MALLOC_CAP_SPIRAM) == free_of(1), "get_free_size(SPIRAM)");
        CHECK(heap_caps_get_free_size(MALLOC_CAP_EXEC) == 0, "get_free_size(EXEC)");
    }

    /* Edge cases. */
    do_alloc(0, MALLOC_CAP_DEFAULT);
    CHECK(heap_caps_malloc((size_t)-1, MALLOC_CAP_DEFAULT) == NULL, "malloc(SIZE_MAX)");
    CHECK(heap_caps_malloc(TLSF_REGION0_SIZE, MALLOC_CAP_DEFAULT) == NULL, "malloc(region size)");
    CHECK(heap_caps_malloc(16, MALLOC_CAP_EXEC) == NULL, "caps no heap has were served");
    heap_caps_free(NULL);
    {
        size_t before = heap_caps_get_free_size(MALLOC_CAP_DEFAULT);
        int local[4];
        heap_caps_free(&local[2]); /* not in any heap: ignored */
        CHECK(heap_caps_get_free_size(MALLOC_CAP_DEFAULT) == before, "foreign free changed heap");
        do_alloc(40, MALLOC_CAP_SPIRAM);
        CHECK(g_nlive == 1 && find_heap(g_live[0].p) == 1, "SPIRAM request not served from heap 1");
        void *p = g_live[0].p;
        do_free(0);
        heap_caps_free(p); /* double free: refused, accounting intact */
        CHECK(heap_caps_get_free_size(MALLOC_CAP_DEFAULT) == before, "double free changed free");
    }
    check_heaps("edge");
    {
        /* The largest block reported is really allocatable, in one piece. */
        size_t largest = heap_caps_get_largest_free_block(MALLOC_CAP_DEFAULT);
        CHECK(largest == fit_of(&g_stat[0].g, g_stat[0].largest), "largest free block %zu",
              largest);
        do_alloc(largest, MALLOC_CAP_DEFAULT);
        CHECK(heap_caps_get_largest_free_block(MALLOC_CAP_DMA) == 0 ||
                  heap_caps_malloc(heap_caps_get_largest_free_block(MALLOC_CAP_DMA) + W,
                                   MALLOC_CAP_DMA) == NULL,
              "DMA request above the largest DMA block served");
        /* Heap 0 keeps less than one list slice (2 KiB): DEFAULT spills into
         * heap 1, DMA must fail. */
        do_alloc(4096, MALLOC_CAP_DEFAULT);
        CHECK(g_nlive == 2 && find_heap(g_live[1].p) == 1, "DEFAULT did not spill into heap 1");
        do_alloc(4096, MALLOC_CAP_DMA);
        CHECK(g_nlive == 2, "DMA request served with heap 0 full");
        while (g_nlive > 0) do_free(0);
    }

    /* Exhaustion of both heaps with 1 KiB blocks, then free in random order. */
    while (g_nlive < MAX_LIVE) {
        int before = g_nlive;
        do_alloc(1024, MALLOC_CAP_8BIT);
        ops++;
        if (g_nlive == before) break;
    }
    CHECK(g_nlive < MAX_LIVE, "heaps never exhausted");
    CHECK(fit_of(&g_stat[0].g, g_stat[0].largest) < 1024 &&
              fit_of(&g_stat[1].g, g_stat[1].largest) < 1024,
          "exhausted with free blocks of %zu / %zu", g_stat[0].largest, g_stat[1].largest);
    while (g_nlive > 0) { do_free((int)(rnd() % (unsigned)g_nlive)); ops++; }
    CHECK(g_stat[0].nfree == 1 && g_stat[1].nfree == 1, "not one free block per heap again");

    /* Random mix: mostly small, some medium, rare large; mixed caps. */
    static const uint32_t caps_mix[] = {MALLOC_CAP_DEFAULT, MALLOC_CAP_DEFAULT, MALLOC_CAP_8BIT,
                                        MALLOC_CAP_DMA, MALLOC_CAP_SPIRAM,
                                        MALLOC_CAP_INTERNAL | MALLOC_CAP_8BIT};
    for (int i = 0; i < OPS; i++, ops++) {
        uint32_t r = rnd();
        if (g_nlive > 0 && (r % 100) < (g_nlive > 150 ? 60u : 45u)) {
            do_free((int)(rnd() % (unsigned)g_nlive));
        } else {
            uint32_t c = rnd() % 100;
            size_t n = c < 60 ? 1 + rnd() % 64 : c < 90 ? 65 + rnd() % 1024
                                               : c < 99 ? 1024 + rnd() % 8192
                                                        : 8192 + rnd() % 40000;
            do_alloc(n, caps_mix[rnd() % (sizeof(caps_mix) / sizeof(caps_mix[0]))]);
        }
    }
    while (g_nlive > 0) { do_free(g_nlive - 1); ops++; }
    CHECK(g_stat[0].nfree == 1 && g_stat[1].nfree == 1, "not whole again at the end");

    printf("tlsf host test (%s control, %u-byte words): %lu operations, %lu invariant checks\n",
#ifdef TLSF_FIXED_CONTROL
           "fixed",
#else
           "dynamic",
#endif
           (unsigned)W, ops, g_checks);
    printf("%lu passed, %lu failed\n", g_checks - g_failed, g_failed);
    exit(g_failed ? 1 : 0); /* on the target: semihosting SYS_EXIT */
}
