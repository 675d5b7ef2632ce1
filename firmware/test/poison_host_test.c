/* poison_host_test.c - randomized test of the ESP-IDF heap poisoning in
 * src/multi_heap.c on the host, built light (-DCONFIG_HEAP_POISONING_LIGHT)
 * and comprehensive (-DCONFIG_HEAP_POISONING_COMPREHENSIVE -DTLSF_FREE_FILL=0xFE).
 *
 * Random malloc/free over both heaps; after every operation: each live
 * block's head (canary, requested size) and tail canary, comprehensive
 * fills, heap_caps_check_integrity_all, and the public figures against each
 * other. Deliberate damage (a byte past a block, the size word, a write into
 * freed memory) must be found and, once repaired, no longer reported. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../src/heap_caps.h"

#define MAX_LIVE 128
#define OPS 6000

typedef struct { uint8_t *p; size_t n; uint8_t tag; } live_t;
static live_t g_live[MAX_LIVE];
static int g_nlive;
static unsigned long g_checks, g_failed;
static uint32_t g_rng = 0x9E3779B9u;

static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return g_rng;
}

#define CHECK(cond, ...)                                             \
    do {                                                             \
        g_checks++;                                                  \
        if (!(cond)) {                                               \
            if (++g_failed < 20) {                                   \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                        \
                fputc('\n', stderr);                                 \
            }                                                        \
        }                                                            \
    } while (0)

static void check_all(const char *after)
{
    for (int i = 0; i < g_nlive; i++) {
        const live_t *l = &g_live[i];
        const poison_head_t *h = (const poison_head_t *)l->p - 1;
        uint32_t tail;
        memcpy(&tail, l->p + l->n, sizeof(tail));
        CHECK(h->head_canary == HEAD_CANARY_PATTERN && h->alloc_size == l->n &&
                  tail == TAIL_CANARY_PATTERN,
              "%s: block %d head/tail", after, i);
        size_t bad = 0;
        for (size_t k = 0; k < l->n; k++) bad += l->p[k] != (uint8_t)(l->tag + k);
        CHECK(bad == 0, "%s: payload of block %d overwritten", after, i);
    }
    CHECK(heap_caps_check_integrity_all(false), "%s: integrity check failed", after);

    /* Public figures: each heap's info agrees with the free-size getter, the
     * caps sums agree with the heaps, and the overhead is hidden. */
    multi_heap_info_t h0, h1, all;
    CHECK(heap_caps_registered_info(0, &h0) && heap_caps_registered_info(1, &h1) &&
              !heap_caps_registered_info(2, &all),
          "%s: two heaps", after);
    heap_caps_get_info(&all, MALLOC_CAP_DEFAULT);
    CHECK(all.total_free_bytes == h0.total_free_bytes + h1.total_free_bytes &&
              heap_caps_get_free_size(MALLOC_CAP_DEFAULT) == all.total_free_bytes,
          "%s: free sizes", after);
    CHECK(heap_caps_get_largest_free_block(MALLOC_CAP_INTERNAL) == h0.largest_free_block,
          "%s: largest", after);
    CHECK(all.allocated_blocks == (size_t)g_nlive + 1u, "%s: %zu allocated, %d live + table",
          after, all.allocated_blocks, g_nlive);
    /* The largest free block the info reports can really be allocated. */
    if (h0.largest_free_block > 0) {
        void *p = heap_caps_malloc(h0.largest_free_block, MALLOC_CAP_INTERNAL);
        CHECK(p != NULL, "%s: largest_free_block %zu not allocatable", after,
              h0.largest_free_block);
        heap_caps_free(p);
    }
}

static void do_alloc(size_t n)
{
    uint32_t caps = (rnd() & 1) ? MALLOC_CAP_INTERNAL : MALLOC_CAP_DEFAULT;
    uint8_t *p = heap_caps_malloc(n, caps);
    if (p == NULL || g_nlive == MAX_LIVE) {
        heap_caps_free(p);
        return;
    }
#ifdef MULTI_HEAP_POISONING_SLOW
    size_t notce = 0;
    for (size_t k = 0; k < n; k++) notce += p[k] != MALLOC_FILL_PATTERN;
    CHECK(notce == 0, "new block of %zu not filled with 0xCE", n);
#endif
    uint8_t tag = (uint8_t)rnd();
    for (size_t k = 0; k < n; k++) p[k] = (uint8_t)(tag + k);
    g_live[g_nlive++] = (live_t){p, n, tag};
}

static void do_free(int i)
{
    heap_caps_free(g_live[i].p);
    g_live[i] = g_live[--g_nlive];
}

int main(void)
{
    heap_caps_init();
    check_all("init");
    for (int op = 0; op < OPS; op++) {
        if (g_nlive > 0 && rnd() % 100 < 45) {
            do_free((int)(rnd() % (unsigned)g_nlive));
        } else {
            size_t n = rnd() % 100 < 80 ? 1 + rnd() % 200 : 1 + rnd() % 6000;
            do_alloc(n);
        }
        check_all("op");

        /* Now and then: damage, detect, repair. */
        if (op % 97 == 0 && g_nlive > 0) {
            live_t *l = &g_live[rnd() % (unsigned)g_nlive];
            l->p[l->n] ^= 0x5A; /* one byte past the request */
            CHECK(!heap_caps_check_integrity_all(false), "overrun by 1 not found");
            l->p[l->n] ^= 0x5A;
            ((poison_head_t *)l->p - 1)->alloc_size += 4; /* size word */
            CHECK(!heap_caps_check_integrity_all(false), "bad alloc_size not found");
            ((poison_head_t *)l->p - 1)->alloc_size -= 4;
            CHECK(heap_caps_check_integrity_all(false), "repaired heap still reported");
        }
#ifdef MULTI_HEAP_POISONING_SLOW
        if (op % 89 == 0) {
            /* Write after free: deep inside a freed 512-byte block. */
            uint8_t *p = heap_caps_malloc(512, MALLOC_CAP_DEFAULT);
            uint8_t *guard = heap_caps_malloc(16, MALLOC_CAP_DEFAULT);
            if (p != NULL && guard != NULL) {
                heap_caps_free(p);
                CHECK(p[100] == FREE_FILL_PATTERN, "freed memory not 0xFE");
                p[100] = 0;
                CHECK(!heap_caps_check_integrity_all(false), "write after free not found");
                p[100] = FREE_FILL_PATTERN;
                CHECK(heap_caps_check_integrity_all(false), "repaired fill still reported");
            } else {
                heap_caps_free(p);
            }
            heap_caps_free(guard);
        }
#endif
    }
    /* A block freed with a broken tail is reported and still freed. */
    {
        uint32_t before = multi_heap_poison_errors;
        uint8_t *p = heap_caps_malloc(13, MALLOC_CAP_DEFAULT);
        memset(p, 0x11, 16); /* 3 bytes too many, as the overrun scenario */
        heap_caps_free(p);
        CHECK(multi_heap_poison_errors == before + 1 &&
                  multi_heap_last_corrupt == (const poison_head_t *)p - 1,
              "broken tail not reported at free");
    }
    while (g_nlive > 0) do_free(g_nlive - 1);
    check_all("end");
    printf("poison host test (%s): %d operations, %lu checks\n",
           multi_heap_poisoning_level == 2 ? "comprehensive" : "light", OPS, g_checks);
    printf("%lu passed, %lu failed\n", g_checks - g_failed, g_failed);
    return g_failed ? 1 : 0;
}
